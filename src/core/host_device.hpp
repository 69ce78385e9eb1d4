// XTRAIN_HOST_DEVICE marks a function that both the CPU code (g++) and the
// CUDA kernels (nvcc) compile: the one definition of a piece of math that the
// CPU tests check for the GPU too.
#pragma once

#ifdef __CUDACC__
#define XTRAIN_HOST_DEVICE __host__ __device__
#else
#define XTRAIN_HOST_DEVICE
#endif

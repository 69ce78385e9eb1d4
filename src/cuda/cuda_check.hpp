// Turning CUDA runtime status codes into xtrain::Error.
#pragma once

#include <cuda_runtime_api.h>

#include "xtrain/error.hpp"

#define XTRAIN_CUDA_CHECK(call)                                                  \
  do {                                                                           \
    const cudaError_t xtrain_cuda_status = (call);                               \
    XTRAIN_CHECK(xtrain_cuda_status == cudaSuccess, "CUDA error in ", #call, ": ", \
                 cudaGetErrorString(xtrain_cuda_status));                        \
  } while (0)

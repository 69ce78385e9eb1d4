// Turning CUDA runtime, cuBLAS and cuDNN status codes into xtrain::Error, so a
// failing call names itself and the library's reason instead of aborting.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "xtrain/error.hpp"

#define XTRAIN_CUDA_CHECK(call)                                                    \
  do {                                                                             \
    const cudaError_t xtrain_cuda_status = (call);                                 \
    XTRAIN_CHECK(xtrain_cuda_status == cudaSuccess, "CUDA error in ", #call, ": ", \
                 cudaGetErrorString(xtrain_cuda_status));                          \
  } while (0)

#define XTRAIN_CUBLAS_CHECK(call)                                                                \
  do {                                                                                           \
    const cublasStatus_t xtrain_cublas_status = (call);                                          \
    XTRAIN_CHECK(xtrain_cublas_status == CUBLAS_STATUS_SUCCESS, "cuBLAS error in ", #call, ": ", \
                 cublasGetStatusString(xtrain_cublas_status));                                   \
  } while (0)

#define XTRAIN_CUDNN_CHECK(call)                                                              \
  do {                                                                                        \
    const cudnnStatus_t xtrain_cudnn_status = (call);                                         \
    XTRAIN_CHECK(xtrain_cudnn_status == CUDNN_STATUS_SUCCESS, "cuDNN error in ", #call, ": ", \
                 cudnnGetErrorString(xtrain_cudnn_status));                                   \
  } while (0)

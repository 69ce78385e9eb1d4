// Turning CUDA runtime, cuBLAS and cuDNN status codes into xtrain::Error, so a
// failing call names itself and the library's reason instead of aborting.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "xtrain/error.hpp"

namespace xtrain::cuda {

// Throws "<library> error in <call>: <describe(status)>" unless `status` is
// the library's `success`.
template <typename Status>
inline void check_status(Status status, Status success, const char* library, const char* call,
                         const char* (*describe)(Status)) {
  XTRAIN_CHECK(status == success, library, " error in ", call, ": ", describe(status));
}

}  // namespace xtrain::cuda

#define XTRAIN_CUDA_CHECK(call) \
  ::xtrain::cuda::check_status<cudaError_t>((call), cudaSuccess, "CUDA", #call, cudaGetErrorString)
#define XTRAIN_CUBLAS_CHECK(call)                                                              \
  ::xtrain::cuda::check_status<cublasStatus_t>((call), CUBLAS_STATUS_SUCCESS, "cuBLAS", #call, \
                                               cublasGetStatusString)
#define XTRAIN_CUDNN_CHECK(call)                                                            \
  ::xtrain::cuda::check_status<cudnnStatus_t>((call), CUDNN_STATUS_SUCCESS, "cuDNN", #call, \
                                              cudnnGetErrorString)

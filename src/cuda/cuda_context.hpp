// The CUDA resources of the calling thread on its current device: one stream,
// and a cuBLAS and a cuDNN handle bound to that stream. Every kernel, cuBLAS
// and cuDNN call and every host<->device copy of a thread goes through its
// stream, so one solver thread per GPU (issue: multi-GPU) never waits on
// another's work, and work within a thread stays in issue order.
//
// The stream is a blocking one (cudaStreamCreate, not NonBlocking): code that
// still uses the legacy default stream (a library, a cudaMemcpy) is then
// ordered with it instead of racing it.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <optional>

#include "xtrain/gpu_math.hpp"

namespace xtrain::cuda {

// Created per thread and device on first use; the cuBLAS and cuDNN handles
// only when first asked for (a data layer's copy thread needs a stream only;
// a cuDNN handle costs device memory).
class ThreadContext {
 public:
  explicit ThreadContext(int device);
  ~ThreadContext();
  ThreadContext(const ThreadContext&) = delete;
  ThreadContext& operator=(const ThreadContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas();
  cudnnHandle_t cudnn();

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::optional<GpuMath> cublas_math_applied_;  // the math mode cublas_ has
  cudnnHandle_t cudnn_ = nullptr;
};

// This thread's context on the current device (cudaGetDevice). Throws
// xtrain::Error when the device cannot be used.
ThreadContext& context();
// The same if it exists already (never creates one); null otherwise, and
// while the thread's contexts are being destroyed at its exit.
ThreadContext* existing_context() noexcept;

// Called as a context ends, after its stream has finished: the caching
// allocator stops tagging blocks with it (src/cuda/device_memory_cuda.cpp).
void retire_stream(int device, cudaStream_t stream) noexcept;

inline cudaStream_t stream() { return context().stream(); }
inline cublasHandle_t cublas_handle() { return context().cublas(); }
inline cudnnHandle_t cudnn_handle() { return context().cudnn(); }

// Waits until everything this thread queued on its stream has finished.
void synchronize();

}  // namespace xtrain::cuda

#include "cuda/cuda_context.hpp"

#include <map>
#include <memory>

#include "cuda/cuda_check.hpp"

namespace xtrain::cuda {

ThreadContext::ThreadContext(int device) : device_(device) {
  XTRAIN_CUDA_CHECK(cudaStreamCreate(&stream_));
}

// Errors are ignored: at process exit the driver may already be gone.
ThreadContext::~ThreadContext() {
  int previous = 0;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                        cudaSetDevice(device_) == cudaSuccess;
  if (stream_ && cudaStreamSynchronize(stream_) == cudaSuccess) retire_stream(device_, stream_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(stream_);
  if (switched) cudaSetDevice(previous);
}

cublasHandle_t ThreadContext::cublas() {
  if (!cublas_) {
    XTRAIN_CUBLAS_CHECK(cublasCreate(&cublas_));
    XTRAIN_CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
  }
  // --gpu_math (xtrain/gpu_math.hpp): cuBLAS's default math is float32
  // throughout; TF32 tensor-op math only when asked for.
  const GpuMath math = gpu_math();
  if (!cublas_math_applied_ || *cublas_math_applied_ != math) {
    XTRAIN_CUBLAS_CHECK(cublasSetMathMode(
        cublas_, math == GpuMath::kTf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    cublas_math_applied_ = math;
  }
  return cublas_;
}

cudnnHandle_t ThreadContext::cudnn() {
  if (!cudnn_) {
    XTRAIN_CUDNN_CHECK(cudnnCreate(&cudnn_));
    XTRAIN_CUDNN_CHECK(cudnnSetStream(cudnn_, stream_));
  }
  return cudnn_;
}

namespace {
// A thread's contexts, one per device it used. `alive` guards against use
// from other thread_local destructors that run after this one.
struct ThreadContexts {
  std::map<int, std::unique_ptr<ThreadContext>> by_device;
  bool alive = true;
  ~ThreadContexts() {
    alive = false;
    by_device.clear();
  }
};
thread_local ThreadContexts thread_contexts;
}  // namespace

ThreadContext& context() {
  XTRAIN_CHECK(thread_contexts.alive, "CUDA work requested while its thread is exiting");
  int device = 0;
  XTRAIN_CUDA_CHECK(cudaGetDevice(&device));
  std::unique_ptr<ThreadContext>& slot = thread_contexts.by_device[device];
  if (!slot) slot = std::make_unique<ThreadContext>(device);
  return *slot;
}

ThreadContext* existing_context() noexcept {
  if (!thread_contexts.alive) return nullptr;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return nullptr;
  const auto it = thread_contexts.by_device.find(device);
  return it == thread_contexts.by_device.end() ? nullptr : it->second.get();
}

void synchronize() { XTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream())); }

}  // namespace xtrain::cuda

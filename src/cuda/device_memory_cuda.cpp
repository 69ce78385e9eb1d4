// Device and pinned host memory through the CUDA runtime, with one caching
// allocator per device (src/core/caching_allocator.hpp).
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "core/aligned_host_memory.hpp"
#include "core/caching_allocator.hpp"
#include "core/device_memory.hpp"
#include "core/thread_device_work.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/gpu_in_use.hpp"
#include "xtrain/device.hpp"

namespace xtrain {
namespace {

CachingAllocator::Backend cuda_backend(int device) {
  CachingAllocator::Backend backend;
  backend.device_name = "GPU " + std::to_string(device);
  backend.allocate = [device](std::size_t size) -> void* {
    cuda::DeviceGuard guard(device);
    void* ptr = nullptr;
    const cudaError_t status = cudaMalloc(&ptr, size);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it, the allocator retries
      return nullptr;
    }
    XTRAIN_CUDA_CHECK(status);
    return ptr;
  };
  backend.release = [device](void* ptr) {
    cuda::DeviceGuard guard(device);
    cudaFree(ptr);
  };
  backend.wait = [device](const void* stream_tag) {
    cuda::DeviceGuard guard(device);
    if (stream_tag == nullptr) {
      cudaDeviceSynchronize();
    } else {
      cudaStreamSynchronize(static_cast<cudaStream_t>(const_cast<void*>(stream_tag)));
    }
  };
  // The calling thread's gradient sums in flight finish before cudaFree
  // waits for the device (core/thread_device_work.hpp).
  backend.drain = [] { return drain_pending_work(); };
  return backend;
}

// One allocator per device, created on first use and never destroyed (the
// driver may be gone by the time static destructors run).
CachingAllocator& allocator_for(int device) {
  static std::mutex mutex;
  static auto* allocators = new std::vector<std::unique_ptr<CachingAllocator>>();
  std::lock_guard<std::mutex> lock(mutex);
  if (static_cast<int>(allocators->size()) <= device) allocators->resize(device + 1);
  std::unique_ptr<CachingAllocator>& slot = (*allocators)[device];
  if (!slot) slot = std::make_unique<CachingAllocator>(cuda_backend(device));
  return *slot;
}

const void* stream_tag() { return cuda::stream(); }

}  // namespace

namespace cuda {
void retire_stream(int device, cudaStream_t stream) noexcept {
  allocator_for(device).forget_stream(stream);
}
}  // namespace cuda

GpuMemoryStatistics gpu_memory_statistics(int id) {
  const CachingAllocator::Statistics s = allocator_for(id).statistics();
  return {s.in_use_bytes, s.cached_bytes, s.peak_in_use_bytes, s.backend_allocations};
}

namespace device_memory {

void* allocate(std::size_t size, int* device) {
  XTRAIN_CUDA_CHECK(cudaGetDevice(device));
  if (size == 0) return nullptr;
  return allocator_for(*device).allocate(size, stream_tag());
}

// Tagged with this thread's stream if it has one; a thread that never ran
// GPU work (or is exiting) gives no tag, and reuse then waits for the device.
void free(void* ptr, int device) noexcept {
  if (!ptr) return;
  const void* tag = nullptr;
  try {
    cuda::DeviceGuard guard(device);
    if (const cuda::ThreadContext* context = cuda::existing_context()) tag = context->stream();
  } catch (...) {
  }
  allocator_for(device).free(ptr, tag);
}

void inject_out_of_memory(int device, int count) {
  allocator_for(device).inject_out_of_memory(count);
}

std::size_t cache_releases(int device) {
  return allocator_for(device).statistics().backend_releases;
}

void zero(void* ptr, std::size_t size, int device) {
  cuda::DeviceGuard guard(device);
  if (size > 0) XTRAIN_CUDA_CHECK(cudaMemsetAsync(ptr, 0, size, cuda::stream()));
}

void copy_to_host(void* host, const void* device_ptr, std::size_t size, int device) {
  cuda::DeviceGuard guard(device);
  if (size == 0) return;
  XTRAIN_CUDA_CHECK(
      cudaMemcpyAsync(host, device_ptr, size, cudaMemcpyDeviceToHost, cuda::stream()));
  cuda::synchronize();
}

// Waits for the copy: the host side may be overwritten as soon as we return.
void copy_to_device(void* device_ptr, const void* host, std::size_t size, int device) {
  cuda::DeviceGuard guard(device);
  if (size == 0) return;
  XTRAIN_CUDA_CHECK(
      cudaMemcpyAsync(device_ptr, host, size, cudaMemcpyHostToDevice, cuda::stream()));
  cuda::synchronize();
}

// From page-locked memory the DMA engine reads the host buffer while the
// stream runs on; the caller keeps the buffer intact until then
// (StreamMarker). (From pageable memory the runtime would first wait for the
// stream to drain: the stall this function exists to avoid.)
void copy_to_device_async(void* device_ptr, const void* pinned_host, std::size_t size,
                          int device) {
  cuda::DeviceGuard guard(device);
  if (size == 0) return;
  XTRAIN_CUDA_CHECK(
      cudaMemcpyAsync(device_ptr, pinned_host, size, cudaMemcpyHostToDevice, cuda::stream()));
}

void* allocate_host(std::size_t size, bool* pinned) {
  *pinned = false;
  if (size == 0) return nullptr;
  if (!cuda::gpu_in_use()) return allocate_aligned_host(size);
  void* ptr = nullptr;
  const cudaError_t status = cudaHostAlloc(&ptr, size, cudaHostAllocPortable);
  if (status != cudaSuccess) {
    // Page-locked memory is limited (ulimit -l, containers): fall back to
    // pageable memory, which only makes transfers slower.
    cudaGetLastError();
    return allocate_aligned_host(size);
  }
  *pinned = true;
  return ptr;
}

void free_host(void* ptr, bool pinned) noexcept {
  if (pinned) {
    cudaFreeHost(ptr);
  } else {
    free_aligned_host(ptr);
  }
}

StreamMarker::~StreamMarker() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void StreamMarker::record(int device) {
  XTRAIN_CHECK(event_ == nullptr || device == device_, "a stream marker of GPU ", device_,
               " cannot mark the stream of GPU ", device,
               ": the work it orders was queued on GPU ", device_);
  cuda::DeviceGuard guard(device);
  if (!event_) {
    cudaEvent_t event = nullptr;
    XTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    event_ = event;
    device_ = device;
  }
  XTRAIN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), cuda::stream()));
}

void StreamMarker::make_this_thread_wait() const {
  if (!event_) return;
  cuda::DeviceGuard guard(device_);
  XTRAIN_CUDA_CHECK(cudaStreamWaitEvent(cuda::stream(), static_cast<cudaEvent_t>(event_), 0));
}

void StreamMarker::wait_on_host() const {
  if (!event_) return;
  XTRAIN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)));
}

}  // namespace device_memory
}  // namespace xtrain

// The CPU-only build: there is no device memory to have.
#ifndef XTRAIN_USE_CUDA

#include "core/aligned_host_memory.hpp"
#include "core/device_memory.hpp"
#include "xtrain/error.hpp"

namespace xtrain::device_memory {
namespace {
[[noreturn]] void no_cuda() {
  throw Error(
      "GPU memory was requested, but this xtrain was built without CUDA; use "
      "solver_mode: CPU (or omit --gpu), or rebuild with the CUDA toolkit installed");
}
}  // namespace

void* allocate(std::size_t, int*) { no_cuda(); }
void free(void*, int) noexcept {}
void inject_out_of_memory(int, int) { no_cuda(); }
std::size_t cache_releases(int) { return 0; }
void zero(void*, std::size_t, int) { no_cuda(); }
void copy_to_host(void*, const void*, std::size_t, int) { no_cuda(); }
void copy_to_device(void*, const void*, std::size_t, int) { no_cuda(); }
void copy_to_device_async(void*, const void*, std::size_t, int) { no_cuda(); }

void* allocate_host(std::size_t size, bool* pinned) {
  *pinned = false;
  return allocate_aligned_host(size);
}

void free_host(void* ptr, bool) noexcept { free_aligned_host(ptr); }

StreamMarker::~StreamMarker() = default;
void StreamMarker::record(int) {}
void StreamMarker::make_this_thread_wait() const {}
void StreamMarker::wait_on_host() const {}

}  // namespace xtrain::device_memory

#endif  // XTRAIN_USE_CUDA

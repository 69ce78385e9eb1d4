// The CPU-only build: there is no device memory to have.
#ifndef XTRAIN_USE_CUDA

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
void free(void*, int) {}
void zero(void*, std::size_t, int) { no_cuda(); }
void copy_to_host(void*, const void*, std::size_t, int) { no_cuda(); }
void copy_to_device(void*, const void*, std::size_t, int) { no_cuda(); }

}  // namespace xtrain::device_memory

#endif  // XTRAIN_USE_CUDA

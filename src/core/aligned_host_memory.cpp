#include "core/aligned_host_memory.hpp"

#include <cstdlib>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {
constexpr std::size_t kHostAlignment = 64;
}

void* allocate_aligned_host(std::size_t size) {
  if (size == 0) return nullptr;
  const std::size_t rounded = (size + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  void* ptr = std::aligned_alloc(kHostAlignment, rounded);
  XTRAIN_CHECK(ptr != nullptr, "out of host memory allocating ", size, " bytes");
  return ptr;
}

void free_aligned_host(void* ptr) noexcept { std::free(ptr); }

}  // namespace xtrain

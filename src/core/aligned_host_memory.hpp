// Plain host memory for blobs: 64-byte aligned, which suits AVX-512 loads and
// keeps rows on cache lines. Used for every host buffer of a CPU-only build
// and for the unpinned ones of a CUDA build.
#pragma once

#include <cstddef>

namespace xtrain {

void* allocate_aligned_host(std::size_t size);
void free_aligned_host(void* ptr) noexcept;

}  // namespace xtrain

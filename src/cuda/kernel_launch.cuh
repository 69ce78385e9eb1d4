// What every CUDA kernel file of ours shares: the launch geometry, and one
// grid-stride kernel that applies a functor of the shared headers
// (src/core/elementwise_ops.hpp and friends) elementwise, so a launcher for an
// elementwise operation is a single line. Included by .cu files only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "cuda/cuda_check.hpp"

namespace xtrain::cuda {

constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU; the grid-stride loops cover the rest.
constexpr std::size_t kMaxBlocks = 4096;

inline int blocks_for(std::size_t n) {
  return static_cast<int>(
      std::min<std::size_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks));
}

// The index of this thread's first element; step by grid_stride().
__device__ inline std::size_t grid_start() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() {
  return static_cast<std::size_t>(blockDim.x) * gridDim.x;
}

// for (i = this thread's first; i < count; i += the grid's size), with
// 64-bit indices: the loop of a one-thread-per-element kernel.
#define XTRAIN_GRID_STRIDE_LOOP(i, count)                                                     \
  for (std::int64_t i = static_cast<std::int64_t>(::xtrain::cuda::grid_start()); i < (count); \
       i += static_cast<std::int64_t>(::xtrain::cuda::grid_stride()))

template <typename Op, typename... Inputs>
__global__ void apply_kernel(std::size_t n, Op op, float* out, const Inputs*... in) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) out[i] = op(in[i]...);
}

// out[i] = op(in[i]...) for i in [0, n) on `stream`; `out` may alias an input.
template <typename Op, typename... Inputs>
void apply(std::size_t n, cudaStream_t stream, Op op, float* out, const Inputs*... in) {
  if (n == 0) return;
  apply_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(n, op, out, in...);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

// Checks the launch just made (bad configuration etc.); the kernel's own
// faults surface at the next synchronising call.
inline void check_launch() { XTRAIN_CUDA_CHECK(cudaGetLastError()); }

// kernel(arguments...) on `stream` with enough threads for n elements (its
// grid-stride loop covers the rest), checked; nothing when n is 0 (a grid of
// no blocks is a launch error).
template <typename... Parameters, typename... Arguments>
void launch_for(std::size_t n, cudaStream_t stream, void (*kernel)(Parameters...),
                const Arguments&... arguments) {
  if (n == 0) return;
  kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream>>>(arguments...);
  check_launch();
}

}  // namespace xtrain::cuda

// The GPU side of core/device_for_each_index.hpp: one thread per index, a
// grid-stride loop. Included by the .cu file that instantiates it for its
// functors.
#pragma once

#include <cstdint>

#include "core/device_for_each_index.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {

template <typename Op>
__global__ void for_each_index_kernel(std::int64_t n, Op op) {
  XTRAIN_GRID_STRIDE_LOOP(i, n) op(i);
}

template <typename Op>
void for_each_index(std::int64_t n, const Op& op) {
  if (n <= 0) return;
  for_each_index_kernel<<<blocks_for(static_cast<std::size_t>(n)), kThreadsPerBlock, 0, stream()>>>(
      n, op);
  check_launch();
}

}  // namespace xtrain::cuda

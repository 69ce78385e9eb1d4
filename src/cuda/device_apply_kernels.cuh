// The definitions of the launchers of device_apply_kernels.hpp: the
// single-output functors through kernel_launch.cuh's apply, the multi-array
// steps through for_each_kernel. Included by the .cu files that instantiate
// them for their functors.
#pragma once

#include "cuda/cuda_context.hpp"
#include "cuda/device_apply_kernels.hpp"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {

// op(arrays[i]...) for every i: the multi-array update steps.
template <typename Op, typename... Arrays>
__global__ void for_each_kernel(std::size_t n, Op op, Arrays*... arrays) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) op(arrays[i]...);
}

template <typename Op, typename... Inputs>
void apply(std::size_t n, const Op& op, float* out, const Inputs*... in) {
  apply(n, stream(), op, out, in...);
}

template <typename Op, typename... Arrays>
void for_each(std::size_t n, const Op& op, Arrays*... arrays) {
  if (n == 0) return;
  for_each_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, op, arrays...);
  check_launch();
}

}  // namespace xtrain::cuda

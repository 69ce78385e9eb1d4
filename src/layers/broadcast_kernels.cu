// The kernels of Scale and Bias. Element j of an (outer, dim, inner) array
// has d = (j / inner) % dim.
#include "core/reduction_terms.hpp"
#include "layers/broadcast_kernels.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/grid_reduction.cuh"
#include "cuda/kernel_launch.cuh"
#include "layers/scale_ops.hpp"

namespace xtrain::cuda {
namespace {

__global__ void bias_forward_kernel(std::size_t n, std::size_t dim, std::size_t inner,
                                    const float* x, const float* bias, float* y) {
  const ops::Add add;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    y[j] = add(x[j], bias[(j / inner) % dim]);
  }
}

__global__ void scale_forward_kernel(std::size_t n, std::size_t dim, std::size_t inner,
                                     const float* x, const float* scale, const float* bias,
                                     bool fused_relu, float* y) {
  const ops::ScaleShift scale_shift;
  const ops::ReluForward relu{0.0f};
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    const std::size_t d = (j / inner) % dim;
    const float value = scale_shift(x[j], scale[d], bias ? bias[d] : 0.0f);
    y[j] = fused_relu ? relu(value) : value;
  }
}

__global__ void scale_backward_kernel(std::size_t n, std::size_t dim, std::size_t inner,
                                      const float* dy, const float* scale, float* dx) {
  const ops::Multiply multiply;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    dx[j] = multiply(dy[j], scale[(j / inner) % dim]);
  }
}

// sums[d] (+)= total.sum, dots[d] (+)= total.dot, for each given array.
struct WriteDimSums {
  float* sums;
  float* dots;
  bool accumulate;
  __device__ void operator()(std::size_t d, const reduction::SumAndDot& total) const {
    if (sums) sums[d] = (accumulate ? sums[d] : 0.0f) + static_cast<float>(total.sum);
    if (dots) dots[d] = (accumulate ? dots[d] : 0.0f) + static_cast<float>(total.dot);
  }
};

}  // namespace

void bias_forward(const float* x, const float* bias, float* y, std::size_t outer, std::size_t dim,
                  std::size_t inner) {
  const std::size_t n = outer * dim * inner;
  launch_for(n, stream(), bias_forward_kernel, n, dim, inner, x, bias, y);
}

void scale_forward(const float* x, const float* scale, const float* bias, float* y,
                   std::size_t outer, std::size_t dim, std::size_t inner, bool fused_relu) {
  const std::size_t n = outer * dim * inner;
  launch_for(n, stream(), scale_forward_kernel, n, dim, inner, x, scale, bias, fused_relu, y);
}

void scale_backward(const float* dy, const float* scale, float* dx, std::size_t outer,
                    std::size_t dim, std::size_t inner) {
  const std::size_t n = outer * dim * inner;
  launch_for(n, stream(), scale_backward_kernel, n, dim, inner, dy, scale, dx);
}

void per_dim_sums(const float* dy, const float* x, std::size_t outer, std::size_t dim,
                  std::size_t inner, float* sums, float* dots, bool accumulate) {
  if (dim == 0 || (!sums && !dots)) return;
  // Many blocks per d, in double, in an order fixed by the shape
  // (grid_reduction.cuh).
  reduce_per_channel(reduction::ChannelTiling::plan(outer, dim, inner),
                     reduction::SingleSweep<reduction::SumAndDotOf>{{dy, dots ? x : nullptr}},
                     WriteDimSums{sums, dots, accumulate}, stream());
}

}  // namespace xtrain::cuda

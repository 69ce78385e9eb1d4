// The kernels of Scale and Bias. Element j of an (outer, dim, inner) array
// has d = (j / inner) % dim.
#include "cuda/broadcast_kernels.hpp"
#include "cuda/cuda_context.hpp"
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

// One block per d: its threads stride over the outer * inner values of d,
// then add their partial sums up in shared memory (in double, like the CPU
// path's channel_statistics).
__global__ void per_dim_sums_kernel(std::size_t outer, std::size_t dim, std::size_t inner,
                                    const float* dy, const float* x, float* sums, float* dots,
                                    bool accumulate) {
  __shared__ double partial_sums[kThreadsPerBlock];
  __shared__ double partial_dots[kThreadsPerBlock];
  const std::size_t d = blockIdx.x;
  const std::size_t total = outer * inner;
  double sum = 0;
  double dot = 0;
  for (std::size_t k = threadIdx.x; k < total; k += blockDim.x) {
    const std::size_t j = (k / inner) * dim * inner + d * inner + k % inner;
    sum += dy[j];
    if (dots) dot += static_cast<double>(dy[j]) * x[j];
  }
  partial_sums[threadIdx.x] = sum;
  partial_dots[threadIdx.x] = dot;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      partial_sums[threadIdx.x] += partial_sums[threadIdx.x + half];
      partial_dots[threadIdx.x] += partial_dots[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (sums) sums[d] = (accumulate ? sums[d] : 0.0f) + static_cast<float>(partial_sums[0]);
    if (dots) dots[d] = (accumulate ? dots[d] : 0.0f) + static_cast<float>(partial_dots[0]);
  }
}

}  // namespace

void bias_forward(const float* x, const float* bias, float* y, std::size_t outer, std::size_t dim,
                  std::size_t inner) {
  const std::size_t n = outer * dim * inner;
  if (n == 0) return;
  bias_forward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, dim, inner, x, bias, y);
  check_launch();
}

void scale_forward(const float* x, const float* scale, const float* bias, float* y,
                   std::size_t outer, std::size_t dim, std::size_t inner, bool fused_relu) {
  const std::size_t n = outer * dim * inner;
  if (n == 0) return;
  scale_forward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, dim, inner, x, scale,
                                                                         bias, fused_relu, y);
  check_launch();
}

void scale_backward(const float* dy, const float* scale, float* dx, std::size_t outer,
                    std::size_t dim, std::size_t inner) {
  const std::size_t n = outer * dim * inner;
  if (n == 0) return;
  scale_backward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, dim, inner, dy, scale,
                                                                          dx);
  check_launch();
}

void per_dim_sums(const float* dy, const float* x, std::size_t outer, std::size_t dim,
                  std::size_t inner, float* sums, float* dots, bool accumulate) {
  if (dim == 0 || (!sums && !dots)) return;
  per_dim_sums_kernel<<<static_cast<unsigned>(dim), kThreadsPerBlock, 0, stream()>>>(
      outer, dim, inner, dy, x, sums, dots, accumulate);
  check_launch();
}

}  // namespace xtrain::cuda

// The kernels of Permute and Normalize: each thread computes what one
// iteration of the CPU loop computes, with the same functions.
#include "cuda/cuda_context.hpp"
#include "layers/detection_kernels.hpp"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {
namespace {

__global__ void permute_forward_kernel(std::size_t n, PermuteGeometry geometry, const float* bottom,
                                       float* top) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    top[j] = bottom[geometry.bottom_index(j)];
  }
}

__global__ void permute_backward_kernel(std::size_t n, PermuteGeometry geometry,
                                        const float* top_diff, float* bottom_diff) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    bottom_diff[geometry.bottom_index(j)] = top_diff[j];
  }
}

__global__ void normalize_norms_kernel(ops::NormalizeGeometry geometry, float eps, const float* x,
                                       float* norms) {
  for (std::size_t g = grid_start(); g < geometry.groups(); g += grid_stride()) {
    norms[g] = ops::normalize_group_norm(geometry, x, g, eps);
  }
}

__global__ void normalize_forward_kernel(std::size_t n, ops::NormalizeGeometry geometry,
                                         const float* x, const float* scale, const float* norms,
                                         float* y) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) {
    y[i] = ops::normalize_forward(geometry, x, scale, norms, i);
  }
}

__global__ void normalize_dots_kernel(ops::NormalizeGeometry geometry, const float* x,
                                      const float* dy, const float* scale, float* dots) {
  for (std::size_t g = grid_start(); g < geometry.groups(); g += grid_stride()) {
    dots[g] = ops::normalize_group_dot(geometry, x, dy, scale, g);
  }
}

__global__ void normalize_backward_kernel(std::size_t n, ops::NormalizeGeometry geometry,
                                          const float* x, const float* dy, const float* scale,
                                          const float* norms, const float* dots, float* dx) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) {
    dx[i] = ops::normalize_backward(geometry, x, dy, scale, norms, dots, i);
  }
}

__global__ void normalize_channel_gradients_kernel(ops::NormalizeGeometry geometry, const float* x,
                                                   const float* dy, const float* norms,
                                                   float* partial) {
  for (std::size_t c = grid_start(); c < geometry.channels; c += grid_stride()) {
    partial[c] = ops::normalize_channel_scale_gradient(geometry, x, dy, norms, c);
  }
}

// One thread: the channels' parts added in order, as the CPU loop adds them.
__global__ void normalize_add_scale_gradient_kernel(ops::NormalizeGeometry geometry,
                                                    const float* partial, float* scale_diff) {
  if (grid_start() != 0) return;
  if (geometry.channel_shared) {
    float sum = 0;
    for (std::size_t c = 0; c < geometry.channels; ++c) sum += partial[c];
    scale_diff[0] += sum;
  } else {
    for (std::size_t c = 0; c < geometry.channels; ++c) scale_diff[c] += partial[c];
  }
}

}  // namespace

void permute_forward(const float* bottom, float* top, std::size_t n,
                     const PermuteGeometry& geometry) {
  launch_for(n, stream(), permute_forward_kernel, n, geometry, bottom, top);
}

void permute_backward(const float* top_diff, float* bottom_diff, std::size_t n,
                      const PermuteGeometry& geometry) {
  launch_for(n, stream(), permute_backward_kernel, n, geometry, top_diff, bottom_diff);
}

void normalize_forward(const ops::NormalizeGeometry& geometry, float eps, const float* x,
                       const float* scale, float* norms, float* y) {
  const std::size_t n = geometry.num * geometry.channels * geometry.spatial;
  if (n == 0) return;
  normalize_norms_kernel<<<blocks_for(geometry.groups()), kThreadsPerBlock, 0, stream()>>>(
      geometry, eps, x, norms);
  check_launch();
  normalize_forward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, geometry, x, scale,
                                                                             norms, y);
  check_launch();
}

void normalize_backward(const ops::NormalizeGeometry& geometry, const float* x, const float* dy,
                        const float* scale, const float* norms, float* dots, float* dx) {
  const std::size_t n = geometry.num * geometry.channels * geometry.spatial;
  if (n == 0) return;
  normalize_dots_kernel<<<blocks_for(geometry.groups()), kThreadsPerBlock, 0, stream()>>>(
      geometry, x, dy, scale, dots);
  check_launch();
  normalize_backward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(
      n, geometry, x, dy, scale, norms, dots, dx);
  check_launch();
}

void normalize_scale_backward(const ops::NormalizeGeometry& geometry, const float* x,
                              const float* dy, const float* norms, float* partial,
                              float* scale_diff) {
  if (geometry.channels == 0) return;
  normalize_channel_gradients_kernel<<<blocks_for(geometry.channels), kThreadsPerBlock, 0,
                                       stream()>>>(geometry, x, dy, norms, partial);
  check_launch();
  normalize_add_scale_gradient_kernel<<<1, 1, 0, stream()>>>(geometry, partial, scale_diff);
  check_launch();
}

}  // namespace xtrain::cuda

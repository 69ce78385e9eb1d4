// The kernels of Permute and Normalize: each thread computes what one
// iteration of the CPU loop computes, with the same functions; Normalize's
// long sums are grid-wide reductions (layers/normalize_ops.hpp).
#include "cuda/cuda_context.hpp"
#include "cuda/grid_reduction.cuh"
#include "cuda/kernel_launch.cuh"
#include "layers/detection_kernels.hpp"

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

}  // namespace

void permute_forward(const float* bottom, float* top, std::size_t n,
                     const PermuteGeometry& geometry) {
  launch_for(n, stream(), permute_forward_kernel, n, geometry, bottom, top);
}

void permute_backward(const float* top_diff, float* bottom_diff, std::size_t n,
                      const PermuteGeometry& geometry) {
  launch_for(n, stream(), permute_backward_kernel, n, geometry, top_diff, bottom_diff);
}

// A position's group (across_spatial: false) is C values: one thread each.
// A whole item's (across_spatial) is C x S: a grid-wide reduction per item.
void normalize_forward(const ops::NormalizeGeometry& geometry, float eps, const float* x,
                       const float* scale, float* norms, float* y) {
  const std::size_t n = geometry.num * geometry.channels * geometry.spatial;
  if (n == 0) return;
  if (geometry.across_spatial) {
    reduce_per_channel(ops::normalize_group_tiling(geometry),
                       reduction::SingleSweep<ops::NormalizeSquaresOf>{{x}},
                       ops::StoreNorm{norms, eps}, stream());
  } else {
    launch_for(geometry.groups(), stream(), normalize_norms_kernel, geometry, eps, x, norms);
  }
  launch_for(n, stream(), normalize_forward_kernel, n, geometry, x, scale, norms, y);
}

void normalize_backward(const ops::NormalizeGeometry& geometry, const float* x, const float* dy,
                        const float* scale, const float* norms, float* dots, float* dx) {
  const std::size_t n = geometry.num * geometry.channels * geometry.spatial;
  if (n == 0) return;
  if (geometry.across_spatial) {
    reduce_per_channel(ops::normalize_group_tiling(geometry),
                       reduction::SingleSweep<ops::NormalizeScaledDotsOf>{{geometry, x, dy, scale}},
                       ops::StoreSum{dots}, stream());
  } else {
    launch_for(geometry.groups(), stream(), normalize_dots_kernel, geometry, x, dy, scale, dots);
  }
  launch_for(n, stream(), normalize_backward_kernel, n, geometry, x, dy, scale, norms, dots, dx);
}

// Many blocks per channel (or over everything, for a shared scale), in
// double, in an order fixed by the shape; no float atomics.
void normalize_scale_backward(const ops::NormalizeGeometry& geometry, const float* x,
                              const float* dy, const float* norms, float* scale_diff) {
  if (geometry.num * geometry.channels * geometry.spatial == 0) return;
  reduce_per_channel(
      ops::normalize_scale_tiling(geometry),
      reduction::SingleSweep<ops::NormalizeScaleGradientOf>{{geometry, x, dy, norms}},
      ops::AddSum{scale_diff}, stream());
}

}  // namespace xtrain::cuda

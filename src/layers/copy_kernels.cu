// The kernels of Crop, Tile and Embed (whose row gather BatchReindex and
// Filter share): copies through an index map, the sums of their gradients
// with the Add functor, in the CPU loops' order (Embed's: the segmented sums
// of layers/row_segments.hpp).
#include "layers/copy_kernels.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/loss_reduce.cuh"
#include "layers/embed_ops.hpp"
#include "layers/row_segments.hpp"

namespace xtrain::cuda {
namespace {

__global__ void crop_forward_kernel(std::size_t n, CropGeometry geometry, const float* bottom,
                                    float* top) {
  const std::size_t line = geometry.line_length();
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    top[j] = bottom[geometry.line_start(j / line) + j % line];
  }
}

__global__ void crop_backward_kernel(std::size_t n, CropGeometry geometry, const float* top_diff,
                                     float* bottom_diff) {
  const std::size_t line = geometry.line_length();
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    bottom_diff[geometry.line_start(j / line) + j % line] = top_diff[j];
  }
}

// One thread per (o, i): dy is (outer, tiles, inner).
__global__ void tile_backward_kernel(std::size_t outer, int tiles, std::size_t inner,
                                     const float* dy, float* dx) {
  const ops::Add add;
  const std::size_t n = outer * inner;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    const std::size_t o = j / inner;
    const std::size_t i = j % inner;
    const float* column = dy + o * tiles * inner + i;
    float sum = column[0];
    for (int t = 1; t < tiles; ++t) sum = add(sum, column[t * inner]);
    dx[j] = sum;
  }
}

struct EmbedIndexCheck {
  const float* indices;
  int input_dim;
  __device__ PositionLoss operator()(std::size_t p) const {
    PositionLoss check;
    check.invalid = !ops::embed_index_valid(indices[p], input_dim);
    return check;
  }
};

__global__ void embed_forward_kernel(std::size_t n, int num_output, const float* indices,
                                     const float* weights, float* y) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    const std::size_t p = j / num_output;
    const std::size_t column = j % num_output;
    y[j] = weights[static_cast<std::size_t>(indices[p]) * num_output + column];
  }
}

__global__ void add_row_segments_kernel(ops::RowSegments plan, const float* source,
                                        float* target) {
  const std::size_t n = plan.threads();
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    ops::add_segment_column(plan, source, target, j);
  }
}

}  // namespace

void crop_forward(const float* bottom, float* top, std::size_t n, const CropGeometry& geometry) {
  launch_for(n, stream(), crop_forward_kernel, n, geometry, bottom, top);
}

void crop_backward(const float* top_diff, float* bottom_diff, std::size_t n,
                   const CropGeometry& geometry) {
  launch_for(n, stream(), crop_backward_kernel, n, geometry, top_diff, bottom_diff);
}

void tile_backward(const float* dy, float* dx, std::size_t outer, int tiles, std::size_t inner) {
  const std::size_t n = outer * inner;
  if (n == 0 || tiles <= 0) return;
  tile_backward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(outer, tiles, inner, dy,
                                                                         dx);
  check_launch();
}

long long embed_first_invalid_index(const float* indices, std::size_t positions, int input_dim,
                                    void* scratch) {
  return sum_positions(positions, EmbedIndexCheck{indices, input_dim}, scratch).first_invalid;
}

void embed_forward(const float* indices, const float* weights, float* y, std::size_t positions,
                   int num_output) {
  const std::size_t n = positions * static_cast<std::size_t>(num_output);
  launch_for(n, stream(), embed_forward_kernel, n, num_output, indices, weights, y);
}

void add_row_segments(const ops::RowSegments& plan, const float* source, float* target) {
  launch_for(plan.threads(), stream(), add_row_segments_kernel, plan, source, target);
}

}  // namespace xtrain::cuda

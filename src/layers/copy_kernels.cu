// The kernels of Crop, Tile and Embed: copies through an index map, the sums
// of their gradients with the Add functor, in the CPU loops' order.
#include "layers/copy_kernels.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/loss_reduce.cuh"
#include "layers/embed_ops.hpp"

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

__global__ void embed_weight_backward_kernel(std::size_t positions, int num_output,
                                             const float* indices, const float* dy,
                                             float* weight_diff) {
  const ops::Add add;
  for (std::size_t column = grid_start(); column < static_cast<std::size_t>(num_output);
       column += grid_stride()) {
    for (std::size_t p = 0; p < positions; ++p) {
      float* target = weight_diff + static_cast<std::size_t>(indices[p]) * num_output + column;
      *target = add(*target, dy[p * num_output + column]);
    }
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

void embed_weight_backward(const float* indices, const float* dy, float* weight_diff,
                           std::size_t positions, int num_output) {
  if (positions == 0 || num_output <= 0) return;
  embed_weight_backward_kernel<<<blocks_for(num_output), kThreadsPerBlock, 0, stream()>>>(
      positions, num_output, indices, dy, weight_diff);
  check_launch();
}

}  // namespace xtrain::cuda

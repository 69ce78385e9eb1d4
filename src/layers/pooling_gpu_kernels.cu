#include <cstdint>

#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/pooling_gpu_kernels.hpp"

namespace xtrain::cuda {
namespace {

// index = (plane * rows + row) * cols + col in a stack of rows x cols planes.
struct PlaneIndex {
  std::int64_t plane;
  int row;
  int col;
};
__device__ PlaneIndex split_index(std::int64_t index, int rows, int cols) {
  return {index / cols / rows, static_cast<int>(index / cols % rows),
          static_cast<int>(index % cols)};
}

// Output `index` (p, y, x): the offset of its plane p in the input and its
// window (y, x).
struct OutputWindow {
  std::int64_t plane;
  PoolingWindow rows;
  PoolingWindow cols;
};
__device__ OutputWindow output_window(const PoolingGeometry& g, std::int64_t index) {
  const PlaneIndex at = split_index(index, g.pooled_h, g.pooled_w);
  return {at.plane * g.height * g.width,
          pooling_window(at.row, g.kernel_h, g.pad_h, g.stride_h, g.height),
          pooling_window(at.col, g.kernel_w, g.pad_w, g.stride_w, g.width)};
}

// Input `index` (p, h, w): the offset of its plane p in the output, its
// position h * width + w within the plane, and the windows (ys, xs) holding
// it.
struct InputPosition {
  std::int64_t pooled_plane;
  int here;
  PoolingWindowRange ys;
  PoolingWindowRange xs;
};
__device__ InputPosition input_position(const PoolingGeometry& g, std::int64_t index) {
  const PlaneIndex at = split_index(index, g.height, g.width);
  return {at.plane * g.pooled_h * g.pooled_w, at.row * g.width + at.col,
          windows_holding(at.row, g.kernel_h, g.pad_h, g.stride_h, g.pooled_h),
          windows_holding(at.col, g.kernel_w, g.pad_w, g.stride_w, g.pooled_w)};
}

// One thread per output.
__global__ void max_pool_forward_kernel(PoolingGeometry g, std::int64_t count, const float* input,
                                        float* output, float* mask_top, int* mask) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const OutputWindow at = output_window(g, index);
    const WindowMaximum best = window_maximum(input + at.plane, g.width, at.rows, at.cols);
    output[index] = best.value;
    if (mask_top) {
      mask_top[index] = static_cast<float>(best.index);
    } else {
      mask[index] = best.index;
    }
  }
}

// One thread per input.
__global__ void max_pool_backward_kernel(PoolingGeometry g, std::int64_t count,
                                         const float* output_diff, const float* mask_top,
                                         const int* mask, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const InputPosition in = input_position(g, index);
    float gradient = 0;
    for (int y = in.ys.first; y < in.ys.last; ++y) {
      for (int x = in.xs.first; x < in.xs.last; ++x) {
        const std::int64_t at = in.pooled_plane + y * g.pooled_w + x;
        const int argmax = mask_top ? static_cast<int>(mask_top[at]) : mask[at];
        if (argmax == in.here) gradient += output_diff[at];
      }
    }
    input_diff[index] = gradient;
  }
}

__global__ void average_pool_forward_kernel(PoolingGeometry g, std::int64_t count,
                                            const float* input, float* output) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const OutputWindow at = output_window(g, index);
    output[index] = window_average(input + at.plane, g.width, at.rows, at.cols);
  }
}

__global__ void average_pool_backward_kernel(PoolingGeometry g, std::int64_t count,
                                             const float* output_diff, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const InputPosition in = input_position(g, index);
    const float* plane_diff = output_diff + in.pooled_plane;
    float gradient = 0;
    for (int y = in.ys.first; y < in.ys.last; ++y) {
      const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
      for (int x = in.xs.first; x < in.xs.last; ++x) {
        const PoolingWindow cols = pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width);
        // The CPU's share: output_diff / pool_size, added in output order.
        gradient += plane_diff[y * g.pooled_w + x] / (rows.divisor_extent * cols.divisor_extent);
      }
    }
    input_diff[index] = gradient;
  }
}

std::int64_t output_count(const PoolingGeometry& g) {
  return static_cast<std::int64_t>(g.planes) * g.pooled_h * g.pooled_w;
}
std::int64_t input_count(const PoolingGeometry& g) {
  return static_cast<std::int64_t>(g.planes) * g.height * g.width;
}

// kernel(g, count, arguments...) on the stream, one thread per element.
template <typename Kernel, typename... Arguments>
void launch_pooling(Kernel kernel, const PoolingGeometry& g, std::int64_t count,
                    const Arguments&... arguments) {
  launch_for(static_cast<std::size_t>(count), stream(), kernel, g, count, arguments...);
}

}  // namespace

void max_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output,
                          float* mask_top, int* mask) {
  launch_pooling(max_pool_forward_kernel, g, output_count(g), input, output, mask_top, mask);
}

void max_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                           const float* mask_top, const int* mask, float* input_diff) {
  launch_pooling(max_pool_backward_kernel, g, input_count(g), output_diff, mask_top, mask,
                 input_diff);
}

void average_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output) {
  launch_pooling(average_pool_forward_kernel, g, output_count(g), input, output);
}

void average_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                               float* input_diff) {
  launch_pooling(average_pool_backward_kernel, g, input_count(g), output_diff, input_diff);
}

}  // namespace xtrain::cuda

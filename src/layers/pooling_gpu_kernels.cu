#include <cfloat>
#include <cstdint>

#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/pooling_gpu_kernels.hpp"

namespace xtrain::cuda {
namespace {

// One thread per output (p, y, x), index = (p * pooled_h + y) * pooled_w + x.
__global__ void max_pool_forward_kernel(PoolingGeometry g, std::int64_t count, const float* input,
                                        float* output, float* mask_top, int* mask) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const int x = static_cast<int>(index % g.pooled_w);
    const int y = static_cast<int>(index / g.pooled_w % g.pooled_h);
    const std::int64_t p = index / g.pooled_w / g.pooled_h;
    const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
    const PoolingWindow cols = pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width);
    const float* plane = input + p * g.height * g.width;
    float best = -FLT_MAX;
    int best_index = -1;
    for (int h = rows.begin; h < rows.end; ++h) {
      for (int w = cols.begin; w < cols.end; ++w) {
        const int at = h * g.width + w;
        if (plane[at] > best) {
          best = plane[at];
          best_index = at;
        }
      }
    }
    output[index] = best;
    if (mask_top) {
      mask_top[index] = static_cast<float>(best_index);
    } else {
      mask[index] = best_index;
    }
  }
}

// One thread per input (p, h, w), index = (p * height + h) * width + w.
__global__ void max_pool_backward_kernel(PoolingGeometry g, std::int64_t count,
                                         const float* output_diff, const float* mask_top,
                                         const int* mask, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const int w = static_cast<int>(index % g.width);
    const int h = static_cast<int>(index / g.width % g.height);
    const std::int64_t p = index / g.width / g.height;
    const int here = h * g.width + w;
    const PoolingWindowRange ys = windows_holding(h, g.kernel_h, g.pad_h, g.stride_h, g.pooled_h);
    const PoolingWindowRange xs = windows_holding(w, g.kernel_w, g.pad_w, g.stride_w, g.pooled_w);
    const std::int64_t offset = p * g.pooled_h * g.pooled_w;
    float gradient = 0;
    for (int y = ys.first; y < ys.last; ++y) {
      for (int x = xs.first; x < xs.last; ++x) {
        const std::int64_t at = offset + y * g.pooled_w + x;
        const int argmax = mask_top ? static_cast<int>(mask_top[at]) : mask[at];
        if (argmax == here) gradient += output_diff[at];
      }
    }
    input_diff[index] = gradient;
  }
}

__global__ void average_pool_forward_kernel(PoolingGeometry g, std::int64_t count,
                                            const float* input, float* output) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const int x = static_cast<int>(index % g.pooled_w);
    const int y = static_cast<int>(index / g.pooled_w % g.pooled_h);
    const std::int64_t p = index / g.pooled_w / g.pooled_h;
    const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
    const PoolingWindow cols = pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width);
    const float* plane = input + p * g.height * g.width;
    float sum = 0;
    for (int h = rows.begin; h < rows.end; ++h) {
      for (int w = cols.begin; w < cols.end; ++w) sum += plane[h * g.width + w];
    }
    output[index] = sum / (rows.divisor_extent * cols.divisor_extent);
  }
}

__global__ void average_pool_backward_kernel(PoolingGeometry g, std::int64_t count,
                                             const float* output_diff, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(index, count) {
    const int w = static_cast<int>(index % g.width);
    const int h = static_cast<int>(index / g.width % g.height);
    const std::int64_t p = index / g.width / g.height;
    const PoolingWindowRange ys = windows_holding(h, g.kernel_h, g.pad_h, g.stride_h, g.pooled_h);
    const PoolingWindowRange xs = windows_holding(w, g.kernel_w, g.pad_w, g.stride_w, g.pooled_w);
    const float* plane_diff = output_diff + p * g.pooled_h * g.pooled_w;
    float gradient = 0;
    for (int y = ys.first; y < ys.last; ++y) {
      const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
      for (int x = xs.first; x < xs.last; ++x) {
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

}  // namespace

void max_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output,
                          float* mask_top, int* mask) {
  const std::int64_t count = output_count(g);
  if (count == 0) return;
  max_pool_forward_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                            stream()>>>(g, count, input, output, mask_top, mask);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void max_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                           const float* mask_top, const int* mask, float* input_diff) {
  const std::int64_t count = input_count(g);
  if (count == 0) return;
  max_pool_backward_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                             stream()>>>(g, count, output_diff, mask_top, mask, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void average_pool_forward_gpu(const PoolingGeometry& g, const float* input, float* output) {
  const std::int64_t count = output_count(g);
  if (count == 0) return;
  average_pool_forward_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                                stream()>>>(g, count, input, output);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void average_pool_backward_gpu(const PoolingGeometry& g, const float* output_diff,
                               float* input_diff) {
  const std::int64_t count = input_count(g);
  if (count == 0) return;
  average_pool_backward_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                                 stream()>>>(g, count, output_diff, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace xtrain::cuda

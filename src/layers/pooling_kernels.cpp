// The fast pooling kernels, planes in parallel.
//
// MAX forward: see pooling_max_kernels.cpp.
//
// AVE: one output row at a time, swept by kernel offset:
//   for each window row h, for each kernel column offset j:
//     for every output x whose window holds column c = x * stride - pad + j:
//       sum[x] += input[h, c]
// a strided load and an add that the compiler vectorises; each sum adds its
// inputs in the reference's order. Backward spreads the same way, with the
// offsets in the order that keeps each input's additions in the
// reference's order. Rows of fewer than kSweepMinOutputs outputs (global
// pooling, tiny maps) gain nothing from the sweep and go window by window.
#include "layers/pooling_kernels.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel_loop.hpp"

namespace xtrain {
namespace {

constexpr int kSweepMinOutputs = 8;

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int ceil_div(int a, int b) { return -floor_div(-a, b); }

// For kernel column offset j, the outputs [first[j], end[j]) whose window
// holds input column x * stride - pad + j inside the image. Windows clip
// only to the image here: the padded-image clip of Caffe's AVE divisor
// never removes a column inside the image.
struct ColumnSweep {
  std::vector<int> first;
  std::vector<int> end;
  std::vector<int> divisor_extent;  // per output column, for AVE

  explicit ColumnSweep(const PoolingGeometry& g)
      : first(g.kernel_w), end(g.kernel_w), divisor_extent(g.pooled_w) {
    for (int j = 0; j < g.kernel_w; ++j) {
      const int offset = j - g.pad_w;
      first[j] = std::max(0, ceil_div(-offset, g.stride_w));
      end[j] = std::min(g.pooled_w, floor_div(g.width - 1 - offset, g.stride_w) + 1);
      end[j] = std::max(end[j], first[j]);
    }
    for (int x = 0; x < g.pooled_w; ++x) {
      divisor_extent[x] =
          pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width).divisor_extent;
    }
  }
};

bool use_sweep(const PoolingGeometry& g) { return g.pooled_w >= kSweepMinOutputs; }

std::size_t window_work(const PoolingGeometry& g) {
  return static_cast<std::size_t>(g.pooled_h) * g.pooled_w * g.kernel_h * g.kernel_w +
         static_cast<std::size_t>(g.height) * g.width;
}

// ---------------------------------------------------------------------------
// AVE forward

template <int Stride>
void sum_sweep_columns(const float* __restrict line, int offset, int first, int end, int stride_arg,
                       float* __restrict sum) {
  const int stride = Stride > 0 ? Stride : stride_arg;
  for (int x = first; x < end; ++x) sum[x] += line[x * stride + offset];
}

template <int Stride>
void average_pool_plane_sweep(const PoolingGeometry& g, const ColumnSweep& sweep,
                              const float* input, float* output) {
  for (int y = 0; y < g.pooled_h; ++y) {
    const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
    float* sum = output + y * g.pooled_w;
    std::fill(sum, sum + g.pooled_w, 0.0f);
    for (int h = rows.begin; h < rows.end; ++h) {
      const float* line = input + h * g.width;
      for (int j = 0; j < g.kernel_w; ++j) {
        sum_sweep_columns<Stride>(line, j - g.pad_w, sweep.first[j], sweep.end[j], g.stride_w, sum);
      }
    }
    // The divisor is an int product, as in Caffe, converted once.
    for (int x = 0; x < g.pooled_w; ++x) {
      sum[x] = sum[x] / (rows.divisor_extent * sweep.divisor_extent[x]);
    }
  }
}

// ---------------------------------------------------------------------------
// AVE backward

// Adds share[x] over input columns x * stride + offset. Within one output
// row, an input column gets its contributions from increasing x when the
// caller runs the kernel offsets downwards: the reference's order.
template <int Stride>
void spread_sweep_columns(float* __restrict line, int offset, int first, int end, int stride_arg,
                          const float* __restrict share) {
  const int stride = Stride > 0 ? Stride : stride_arg;
  for (int x = first; x < end; ++x) line[x * stride + offset] += share[x];
}

template <int Stride>
void average_backward_plane_sweep(const PoolingGeometry& g, const ColumnSweep& sweep,
                                  const float* output_diff, float* input_diff, float* share) {
  std::fill(input_diff, input_diff + g.height * g.width, 0.0f);
  for (int y = 0; y < g.pooled_h; ++y) {
    const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
    const float* diff_row = output_diff + y * g.pooled_w;
    for (int x = 0; x < g.pooled_w; ++x) {
      share[x] = diff_row[x] / (rows.divisor_extent * sweep.divisor_extent[x]);
    }
    for (int h = rows.begin; h < rows.end; ++h) {
      float* line = input_diff + h * g.width;
      for (int j = g.kernel_w - 1; j >= 0; --j) {
        spread_sweep_columns<Stride>(line, j - g.pad_w, sweep.first[j], sweep.end[j], g.stride_w,
                                     share);
      }
    }
  }
}

// Calls kernel(std::integral_constant<int, S>) with S the stride when it is
// 1 or 2 (the common ones, fixed at compile time), else 0 (read at run time).
template <typename Kernel>
void with_stride(int stride, Kernel kernel) {
  if (stride == 1) {
    kernel(std::integral_constant<int, 1>());
  } else if (stride == 2) {
    kernel(std::integral_constant<int, 2>());
  } else {
    kernel(std::integral_constant<int, 0>());
  }
}

// AVE over every plane, in parallel: by_window(one_plane, at, pooled_at) on
// rows too short for the sweep (see kSweepMinOutputs), else
// by_sweep(stride, columns, at, pooled_at) with the stride as with_stride
// gives it; `at` and `pooled_at` are the plane's first value in the input
// and in the pooled output, `one_plane` the geometry of a single plane.
template <typename ByWindow, typename BySweep>
void average_pool_planes(const PoolingGeometry& g, ByWindow by_window, BySweep by_sweep) {
  const std::size_t plane = static_cast<std::size_t>(g.height) * g.width;
  const std::size_t pooled_plane = static_cast<std::size_t>(g.pooled_h) * g.pooled_w;
  if (!use_sweep(g)) {
    PoolingGeometry one_plane = g;
    one_plane.planes = 1;
    parallel_for(g.planes, window_work(g),
                 [&](std::int64_t p) { by_window(one_plane, p * plane, p * pooled_plane); });
    return;
  }
  const ColumnSweep columns(g);
  parallel_for(g.planes, window_work(g), [&](std::int64_t p) {
    with_stride(g.stride_w,
                [&](auto stride) { by_sweep(stride, columns, p * plane, p * pooled_plane); });
  });
}

}  // namespace

void max_pool_backward(const PoolingGeometry& g, const float* output_diff, const float* mask_top,
                       const int* mask, float* input_diff) {
  const std::size_t plane = static_cast<std::size_t>(g.height) * g.width;
  const std::size_t pooled_plane = static_cast<std::size_t>(g.pooled_h) * g.pooled_w;
  parallel_for(g.planes, plane + 2 * pooled_plane, [&](std::int64_t p) {
    float* diff = input_diff + p * plane;
    const float* top_diff = output_diff + p * pooled_plane;
    std::fill(diff, diff + plane, 0.0f);
    // -1: the window held no value above -FLT_MAX (all -inf or NaN).
    if (mask_top) {
      const float* argmax = mask_top + p * pooled_plane;
      for (std::size_t i = 0; i < pooled_plane; ++i) {
        const int at = static_cast<int>(argmax[i]);
        if (at >= 0) diff[at] += top_diff[i];
      }
    } else {
      const int* argmax = mask + p * pooled_plane;
      for (std::size_t i = 0; i < pooled_plane; ++i) {
        if (argmax[i] >= 0) diff[argmax[i]] += top_diff[i];
      }
    }
  });
}

void average_pool_forward(const PoolingGeometry& g, const float* input, float* output) {
  average_pool_planes(
      g,
      [&](const PoolingGeometry& one_plane, std::size_t at, std::size_t pooled_at) {
        average_pool_forward_reference(one_plane, input + at, output + pooled_at);
      },
      [&](auto stride, const ColumnSweep& columns, std::size_t at, std::size_t pooled_at) {
        average_pool_plane_sweep<decltype(stride)::value>(g, columns, input + at,
                                                          output + pooled_at);
      });
}

void average_pool_backward(const PoolingGeometry& g, const float* output_diff, float* input_diff) {
  average_pool_planes(
      g,
      [&](const PoolingGeometry& one_plane, std::size_t at, std::size_t pooled_at) {
        average_pool_backward_reference(one_plane, output_diff + pooled_at, input_diff + at);
      },
      [&](auto stride, const ColumnSweep& columns, std::size_t at, std::size_t pooled_at) {
        thread_local std::vector<float> share;
        if (share.size() < static_cast<std::size_t>(g.pooled_w)) share.resize(g.pooled_w);
        average_backward_plane_sweep<decltype(stride)::value>(g, columns, output_diff + pooled_at,
                                                              input_diff + at, share.data());
      });
}

}  // namespace xtrain

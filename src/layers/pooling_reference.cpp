// The reference pooling kernels: one window at a time, Caffe's loops as
// written. The test oracle of the fast kernels in pooling_kernels.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>

#include "layers/pooling_kernels.hpp"

namespace xtrain {

int pooled_size(int input, int kernel, int pad, int stride, bool any_padding, bool round_up) {
  const float windows_after_first = static_cast<float>(input + 2 * pad - kernel) / stride;
  int pooled = static_cast<int>(round_up ? std::ceil(windows_after_first)
                                         : std::floor(windows_after_first)) +
               1;
  if (any_padding && (pooled - 1) * stride >= input + pad) --pooled;
  return pooled;
}

namespace {

// visit(plane, rows, cols) for every window of every plane, in output order;
// `plane` is the offset of the window's plane in the input.
template <typename Visit>
void for_each_window(const PoolingGeometry& g, Visit visit) {
  const std::ptrdiff_t plane_size = static_cast<std::ptrdiff_t>(g.height) * g.width;
  for (std::ptrdiff_t plane = 0; plane < g.planes * plane_size; plane += plane_size) {
    for (int y = 0; y < g.pooled_h; ++y) {
      const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
      for (int x = 0; x < g.pooled_w; ++x) {
        visit(plane, rows, pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width));
      }
    }
  }
}

}  // namespace

void max_pool_forward_reference(const PoolingGeometry& g, const float* input, float* output,
                                float* mask_top, int* mask) {
  for_each_window(g, [&](std::ptrdiff_t plane, const auto& rows, const auto& cols) {
    const WindowMaximum best = window_maximum(input + plane, g.width, rows, cols);
    *output++ = best.value;
    if (mask_top) {
      *mask_top++ = static_cast<float>(best.index);
    } else {
      *mask++ = best.index;
    }
  });
}

void average_pool_forward_reference(const PoolingGeometry& g, const float* input, float* output) {
  for_each_window(g, [&](std::ptrdiff_t plane, const auto& rows, const auto& cols) {
    *output++ = window_average(input + plane, g.width, rows, cols);
  });
}

void max_pool_backward_reference(const PoolingGeometry& g, const float* output_diff,
                                 const float* mask_top, const int* mask, float* input_diff) {
  const int plane = g.height * g.width;
  const int pooled_plane = g.pooled_h * g.pooled_w;
  std::fill(input_diff, input_diff + static_cast<long>(g.planes) * plane, 0.0f);
  for (int p = 0; p < g.planes; ++p, input_diff += plane) {
    for (int i = 0; i < pooled_plane; ++i) {
      const int index = mask_top ? static_cast<int>(*mask_top++) : *mask++;
      // -1: the window held no value above -FLT_MAX (all -inf or NaN).
      if (index >= 0) input_diff[index] += *output_diff;
      ++output_diff;
    }
  }
}

void average_pool_backward_reference(const PoolingGeometry& g, const float* output_diff,
                                     float* input_diff) {
  std::fill(input_diff, input_diff + static_cast<long>(g.planes) * g.height * g.width, 0.0f);
  for_each_window(g, [&](std::ptrdiff_t plane, const auto& rows, const auto& cols) {
    const float share = *output_diff++ / (rows.divisor_extent * cols.divisor_extent);
    float* diff = input_diff + plane;
    for (int h = rows.begin; h < rows.end; ++h) {
      for (int w = cols.begin; w < cols.end; ++w) diff[h * g.width + w] += share;
    }
  });
}

}  // namespace xtrain

// The per-window arithmetic of Caffe's pooling, shared by the CPU kernels
// (layers/pooling_kernels.hpp) and the CUDA ones (cuda/pooling_gpu_kernels.cu):
// both call these same functions, so the CPU tests check the window bounds,
// the divisors and the gradient-gathering ranges the GPU uses.
#pragma once

#include <cfloat>

#include "core/host_device.hpp"

namespace xtrain {

// One window along one axis: [begin, end) clipped to the image, and the
// extent Caffe's average pooling divides by (clipped to input + pad only).
struct PoolingWindow {
  int begin;
  int end;
  int divisor_extent;
};

// Window `index` of an axis of `input` values: it starts at index * stride -
// pad and spans `kernel` values. Inline: the kernels call it per window.
XTRAIN_HOST_DEVICE inline PoolingWindow pooling_window(int index, int kernel, int pad, int stride,
                                                       int input) {
  const int start = index * stride - pad;
  const int padded_end = start + kernel < input + pad ? start + kernel : input + pad;
  return {start > 0 ? start : 0, padded_end < input ? padded_end : input, padded_end - start};
}

// The windows along one axis that hold input position `position`, as the
// range [first, last) of window indices (empty when none does): window y
// holds it when y * stride - pad <= position < y * stride - pad + kernel,
// i.e. (position + pad - kernel) / stride < y <= (position + pad) / stride,
// limited to the `pooled` windows there are. Backward kernels that gather
// gradients per input (one thread per input on the GPU) loop over these.
struct PoolingWindowRange {
  int first;
  int last;
};
XTRAIN_HOST_DEVICE inline PoolingWindowRange windows_holding(int position, int kernel, int pad,
                                                             int stride, int pooled) {
  const int shifted = position + pad;
  const int first = shifted < kernel ? 0 : (shifted - kernel) / stride + 1;
  const int after_last = shifted / stride + 1;
  return {first, after_last < pooled ? after_last : pooled};
}

// The first largest value of window (rows, cols) of a plane `width` values
// wide and its index h * width + w (-1 when none exceeds -FLT_MAX): Caffe
// scans the window row-major from -FLT_MAX, and `>` keeps the first maximum.
struct WindowMaximum {
  float value;
  int index;
};
XTRAIN_HOST_DEVICE inline WindowMaximum window_maximum(const float* plane, int width,
                                                       const PoolingWindow& rows,
                                                       const PoolingWindow& cols) {
  WindowMaximum best{-FLT_MAX, -1};
  for (int h = rows.begin; h < rows.end; ++h) {
    for (int w = cols.begin; w < cols.end; ++w) {
      const int at = h * width + w;
      if (plane[at] > best.value) {
        best.value = plane[at];
        best.index = at;
      }
    }
  }
  return best;
}

// Caffe's AVE of a window: the row-major sum over the window clipped to the
// image, divided by the pool size clipped to input + pad.
XTRAIN_HOST_DEVICE inline float window_average(const float* plane, int width,
                                               const PoolingWindow& rows,
                                               const PoolingWindow& cols) {
  float sum = 0;
  for (int h = rows.begin; h < rows.end; ++h) {
    for (int w = cols.begin; w < cols.end; ++w) sum += plane[h * width + w];
  }
  return sum / (rows.divisor_extent * cols.divisor_extent);
}

}  // namespace xtrain

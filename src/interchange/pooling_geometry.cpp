#include "interchange/pooling_geometry.hpp"

#include <algorithm>

namespace xtrain::interchange {

namespace {

// ceil(a / b) for a >= -b + 1, b > 0.
int ceil_div(int a, int b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

int caffe_pooled_length(const PoolingAxis& axis) {
  const int span = axis.input + 2 * axis.pad - axis.kernel;
  int out = (axis.round_up ? ceil_div(span, axis.stride) : floor_div(span, axis.stride)) + 1;
  if (axis.layer_pads && (out - 1) * axis.stride >= axis.input + axis.pad) --out;
  return out;
}

int onnx_pooled_length(int input, int kernel, int stride, int begin_pad, int end_pad,
                       bool ceil_mode) {
  const int span = input + begin_pad + end_pad - kernel;
  if (!ceil_mode) return floor_div(span, stride) + 1;
  int out = ceil_div(span, stride) + 1;
  if ((out - 1) * stride >= input + begin_pad) --out;
  return out;
}

int onnx_end_pad(const PoolingAxis& axis, int begin_pad, int pre_padding) {
  const int out = caffe_pooled_length(axis);
  const int padded_input = axis.input + 2 * pre_padding;
  // The last window, [(out - 1) stride - begin_pad, ... + kernel), must fit.
  return std::max(0, (out - 1) * axis.stride + axis.kernel - padded_input - begin_pad);
}

std::vector<int> caffe_average_divisors(const PoolingAxis& axis) {
  std::vector<int> divisors(caffe_pooled_length(axis));
  for (int i = 0; i < static_cast<int>(divisors.size()); ++i) {
    const int start = i * axis.stride - axis.pad;
    divisors[i] = std::min(start + axis.kernel, axis.input + axis.pad) - start;
  }
  return divisors;
}

bool caffe_has_same_windows(const OnnxPoolingAxis& axis, bool layer_pads, bool round_up) {
  const int pad = axis.begin_pad + axis.pre_padding;
  if (pad >= axis.kernel) return false;  // Caffe needs pad < kernel
  return caffe_pooled_length({axis.input, axis.kernel, axis.stride, pad, layer_pads, round_up}) ==
         onnx_pooled_length(axis.input + 2 * axis.pre_padding, axis.kernel, axis.stride,
                            axis.begin_pad, axis.end_pad, axis.ceil_mode);
}

std::vector<int> onnx_average_divisors(const OnnxPoolingAxis& axis) {
  const int padded_input = axis.input + 2 * axis.pre_padding;
  std::vector<int> divisors(onnx_pooled_length(padded_input, axis.kernel, axis.stride,
                                               axis.begin_pad, axis.end_pad, axis.ceil_mode));
  for (int i = 0; i < static_cast<int>(divisors.size()); ++i) {
    const int start = i * axis.stride - axis.begin_pad;  // in ONNX's input
    if (start + axis.kernel > padded_input + axis.end_pad) return {};
    divisors[i] = axis.count_include_pad
                      ? axis.kernel
                      : std::min(start + axis.kernel, padded_input) - std::max(start, 0);
  }
  return divisors;
}

}  // namespace xtrain::interchange

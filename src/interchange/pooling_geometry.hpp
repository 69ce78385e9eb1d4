// Caffe's pooling windows along one spatial axis, and the ONNX pooling
// attributes that give the same windows.
//
// Caffe: out = ceil((in + 2 pad - kernel) / stride) + 1 (round_mode CEIL,
// Caffe 1.0's only rounding), less one when the layer pads and the last
// window would start in the end padding ((out - 1) stride >= in + pad); or
// floor(...) + 1 (round_mode FLOOR, Caffe master's), which is ONNX's
// ceil_mode 0 with both pads equal to Caffe's pad. Window i covers [i stride - pad,
// i stride - pad + kernel) clipped to the input; AVE divides its sum by its
// size clipped to [-pad, in + pad) instead (the padding counts, what lies
// beyond it does not).
//
// ONNX (ceil_mode 0): out = floor((in + begin + end - kernel) / stride) + 1
// with explicit begin/end pads. With begin = pad and the end pad below,
// MaxPool (which never takes a pad) gives Caffe's windows, and AveragePool
// with count_include_pad = 1 gives each window's sum / kernel size, which a
// constant factor (kernel size / Caffe's divisor, per output position) turns
// into Caffe's average. (A zero Pad in front of an AveragePool with
// count_include_pad = 0 would say the same, but ONNX Runtime's Pad fusion
// then stops counting the Pad's zeros.)
#pragma once

#include <vector>

namespace xtrain::interchange {

struct PoolingAxis {
  int input = 0;
  int kernel = 1;
  int stride = 1;
  int pad = 0;
  // Caffe drops a last window starting in the padding when the layer pads
  // either axis (pad_h or pad_w), not only this one.
  bool layer_pads = false;
  bool round_up = true;  // round_mode CEIL; false: FLOOR
};

// Caffe's output length along the axis.
int caffe_pooled_length(const PoolingAxis& axis);

// ONNX's output length with explicit pads: floor or ceil rounding; with
// ceil, a last window that would start in the end padding is dropped (as
// PyTorch, whose exports set ceil_mode, computes it).
int onnx_pooled_length(int input, int kernel, int stride, int begin_pad, int end_pad,
                       bool ceil_mode);

// The end pad that makes ONNX's floor rounding give caffe_pooled_length when
// the begin pad is `begin_pad` and the input already carries `pre_padding`
// zeros at each end (AVE's explicit Pad). Never negative: a window Caffe
// keeps never starts in its end padding.
int onnx_end_pad(const PoolingAxis& axis, int begin_pad, int pre_padding);

// Caffe's AVE divisor of each window along the axis.
std::vector<int> caffe_average_divisors(const PoolingAxis& axis);

// One axis of an ONNX MaxPool or AveragePool, whose input may be a zero Pad
// of `pre_padding` at each end of a tensor `input` long.
struct OnnxPoolingAxis {
  int input = 0;
  int kernel = 1;
  int stride = 1;
  int begin_pad = 0;
  int end_pad = 0;
  int pre_padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

// Whether Caffe's pooling with pad begin_pad + pre_padding, rounding up
// (CEIL) or not (FLOOR), has the same windows (count and places) along this
// axis.
bool caffe_has_same_windows(const OnnxPoolingAxis& axis, bool layer_pads, bool round_up);

// ONNX AveragePool's divisor of each window along the axis; empty when a
// window reaches past the end pad (ceil mode), which runtimes divide
// differently.
std::vector<int> onnx_average_divisors(const OnnxPoolingAxis& axis);

}  // namespace xtrain::interchange

// The CPU kernels of the Pooling layer (see pooling_layer.hpp for Caffe's
// semantics), on a stack of `planes` independent H x W planes.
//
// Each kernel comes twice: `*_reference`, the plain per-window loops that
// state Caffe's rules directly (the test oracle), and the fast one the layer
// runs: parallel over planes, inner loops that the compiler vectorises. The
// fast ones give bit-identical results: every output sees its inputs in the
// same order (row-major within the window, `>` keeps the first maximum), and
// every input gradient receives its contributions in the same order.
#pragma once

#include "layers/pooling_window.hpp"

namespace xtrain {

struct PoolingGeometry {
  int planes = 0;  // num * channels
  int height = 0;
  int width = 0;
  int kernel_h = 0;
  int kernel_w = 0;
  int pad_h = 0;
  int pad_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  int pooled_h = 0;
  int pooled_w = 0;
};

// Caffe's output size along one axis, in float as Caffe computes it:
// (input + 2 pad - kernel) / stride rounded up (round_mode CEIL, Caffe 1.0's
// only rounding) or down (FLOOR, Caffe master's round_mode), plus one. When
// the layer has padding on either axis, the last window must start before
// input + pad (only a rounded-up window can start there). (Without any
// padding Caffe keeps a last CEIL window that can start past the input when
// stride > kernel; it comes out empty: -FLT_MAX for MAX, 0 or NaN for AVE. We
// keep that too, as trained nets rely on shapes.) The kernels need nothing
// else: every window is clipped to the input (pooling_window.hpp), and a
// FLOOR window never reaches past the padding, so AVE divides it by the
// whole kernel.
int pooled_size(int input, int kernel, int pad, int stride, bool any_padding, bool round_up);

// MAX: output = the first largest input of each window (-FLT_MAX when none
// exceeds it) and its index y * width + x within the plane (-1 for none),
// written to exactly one of `mask_top` (as float, the layer's second top) and
// `mask` (int); the other is null.
void max_pool_forward_reference(const PoolingGeometry& g, const float* input, float* output,
                                float* mask_top, int* mask);
void max_pool_forward(const PoolingGeometry& g, const float* input, float* output, float* mask_top,
                      int* mask);

// MAX backward: input_diff = 0, then each output's gradient added at its
// argmax (read from `mask_top` if not null, else from `mask`).
void max_pool_backward_reference(const PoolingGeometry& g, const float* output_diff,
                                 const float* mask_top, const int* mask, float* input_diff);
void max_pool_backward(const PoolingGeometry& g, const float* output_diff, const float* mask_top,
                       const int* mask, float* input_diff);

// AVE: output = (sum over the window clipped to the image) / pool_size.
void average_pool_forward_reference(const PoolingGeometry& g, const float* input, float* output);
void average_pool_forward(const PoolingGeometry& g, const float* input, float* output);

// AVE backward: input_diff = 0, then output_diff / pool_size added over
// each window.
void average_pool_backward_reference(const PoolingGeometry& g, const float* output_diff,
                                     float* input_diff);
void average_pool_backward(const PoolingGeometry& g, const float* output_diff, float* input_diff);

}  // namespace xtrain

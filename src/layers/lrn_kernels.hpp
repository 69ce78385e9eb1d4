// The CPU kernels of the LRN layer (see lrn_layer.cpp for the math), on an
// (N, C, H, W) input.
//
// Each kernel comes twice: `*_reference`, Caffe's loops one image at a time
// (the test oracle), and the fast one the layer runs: ACROSS_CHANNELS in
// parallel over (image, block of pixels), sliding over the channels with the
// pixels as the vector lanes; WITHIN_CHANNEL in parallel over planes. Both
// do the reference's arithmetic in the reference's order, so they agree to
// the last bit (up to the sign of a zero).
#pragma once

namespace xtrain {

struct LrnParameters {
  int size = 5;  // local_size, odd
  float alpha = 1;
  float beta = 0.75f;
  float k = 1;
  bool across_channels = true;
};

struct LrnShape {
  int num = 0;
  int channels = 0;
  int height = 0;
  int width = 0;
};

// Forward: scale (the denominator base), power = scale^-beta and output =
// input * power, each with the input's shape; backward needs scale and power.
// The fast kernels keep neither: each computes them a channel (or plane) at
// a time where it needs them, backward again from the input with forward's
// code (the same bits), which saves two arrays of the input's size between
// forward and backward for a little arithmetic.
void lrn_forward_reference(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                           float* scale, float* power, float* output);
void lrn_forward(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                 float* output);

void lrn_backward_reference(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                            const float* output, const float* output_diff, const float* scale,
                            const float* power, float* input_diff);
void lrn_backward(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                  const float* output, const float* output_diff, float* input_diff);

}  // namespace xtrain

// The LRN layer's own CUDA kernels for WITHIN_CHANNEL (cuDNN computes
// ACROSS_CHANNELS; see lrn_layer.cpp), one thread per value, built from the
// functions of layers/lrn_math.hpp that the CPU kernels call too: the window
// sums are added in the CPU's order. On cuda::stream().
#pragma once

#include "layers/lrn_kernels.hpp"

namespace xtrain::cuda {

// scale, power = scale^-beta and output = input * power (each of the input's
// shape); `squares` is scratch of the same size.
void lrn_within_channel_forward_gpu(const LrnParameters& lrn, const LrnShape& shape,
                                    const float* input, float* squares, float* scale, float* power,
                                    float* output);

// input_diff = output_diff * power - 2 alpha beta / n^2 * input * (window sum
// of output_diff * output / scale); `ratios` is scratch of the input's size.
void lrn_within_channel_backward_gpu(const LrnParameters& lrn, const LrnShape& shape,
                                     const float* input, const float* output,
                                     const float* output_diff, const float* scale,
                                     const float* power, float* ratios, float* input_diff);

}  // namespace xtrain::cuda

// Steps that the reference and the fast LRN kernels share (lrn_kernels.hpp):
// elementwise or one-plane pieces whose order of operations both must keep.
#pragma once

#include <cstddef>

#include "layers/lrn_kernels.hpp"

namespace xtrain {

// out[y, x] = sum of in[y', x'] over |y' - y| <= radius, |x' - x| <= radius
// (clipped to the plane), as a row pass then a column pass, each a sum of
// shifted copies (loops the compiler vectorises). `rows` is scratch of
// height * width values.
void lrn_window_sum(const float* in, int height, int width, int radius, float* rows, float* out);

// power[i] = scale[i]^-beta.
void lrn_power(float beta, const float* scale, std::size_t count, float* power);

// WITHIN_CHANNEL, one plane: scale = 1 + alpha * (window sum of squares) /
// n^2. `squares` and `rows` are scratch of one plane each.
void lrn_within_channel_scale_plane(const LrnParameters& lrn, int height, int width,
                                    const float* input, float* squares, float* rows, float* scale);

// WITHIN_CHANNEL backward, one plane: input_diff -= 2 alpha beta / n^2 *
// input * (window sum of output_diff * output / scale). `ratios`, `rows` and
// `sums` are scratch of one plane each.
void lrn_within_channel_backward_plane(const LrnParameters& lrn, int height, int width,
                                       const float* input, const float* output,
                                       const float* output_diff, const float* scale, float* ratios,
                                       float* rows, float* sums, float* input_diff);

}  // namespace xtrain

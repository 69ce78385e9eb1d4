// The per-value arithmetic of the LRN layer (see lrn_layer.cpp), shared by the
// CPU kernels (lrn_reference.cpp, lrn_kernels.cpp) and the CUDA ones
// (cuda/lrn_gpu_kernels.cu), so the CPU tests check the formulas the GPU runs.
#pragma once

#include <cmath>

#include "core/host_device.hpp"

namespace xtrain::lrn_math {

// scale^-0.75 as 1 / (sqrt(s) * sqrt(sqrt(s))): two square roots beat pow().
XTRAIN_HOST_DEVICE inline float power_three_quarters(float scale) {
  const float root = sqrtf(scale);
  return 1.0f / (root * sqrtf(root));
}
// scale^-beta for any other beta.
XTRAIN_HOST_DEVICE inline float power(float scale, float beta) { return powf(scale, -beta); }

// WITHIN_CHANNEL: scale = 1 + alpha * (window sum of squares) / n^2.
XTRAIN_HOST_DEVICE inline float within_channel_scale(float window_sum, float alpha,
                                                     float window_area) {
  return 1.0f + alpha * (window_sum / window_area);
}

// Backward: the value each input's window sums, dtop * top / scale ...
XTRAIN_HOST_DEVICE inline float gradient_ratio(float output_diff, float output, float scale) {
  return output_diff * output / scale;
}
// ... and the window term taken off dbottom: dbottom - factor * bottom * sum,
// factor = 2 alpha beta / n (ACROSS) or / n^2 (WITHIN).
XTRAIN_HOST_DEVICE inline float subtract_window_term(float input_diff, float factor, float input,
                                                     float window_sum) {
  return input_diff - factor * input * window_sum;
}

// The WITHIN_CHANNEL window sum at (y, x) of one height x width plane: the sum
// of in[y', x'] over |y' - y| <= radius, |x' - x| <= radius clipped to the
// plane, added in the order of lrn_window_sum (lrn_steps.hpp): each row's sum
// is in[x], then in[x + d] and in[x - d] for d = 1, 2, ...; the rows' sums
// are added from the top one down. So one thread per value (the GPU) gets the
// same bits as the CPU's row and column sweeps.
XTRAIN_HOST_DEVICE inline float row_window_sum(const float* line, int width, int radius, int x) {
  float sum = line[x];
  for (int d = 1; d <= radius && d < width; ++d) {
    if (x + d < width) sum += line[x + d];
    if (x - d >= 0) sum += line[x - d];
  }
  return sum;
}
XTRAIN_HOST_DEVICE inline float window_sum_at(const float* plane, int height, int width, int radius,
                                              int y, int x) {
  const int begin = y - radius > 0 ? y - radius : 0;
  const int end = y + radius < height - 1 ? y + radius : height - 1;
  float sum = row_window_sum(plane + begin * width, width, radius, x);
  for (int i = begin + 1; i <= end; ++i) sum += row_window_sum(plane + i * width, width, radius, x);
  return sum;
}

}  // namespace xtrain::lrn_math

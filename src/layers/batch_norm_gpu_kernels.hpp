// The BatchNorm layer's CUDA kernels (Caffe's semantics: batch_norm_layer.cpp),
// on an (num, channels, spatial) array, built from the functors of
// layers/batch_norm_math.hpp that the CPU path calls too. All on
// cuda::stream(). Per-channel values (mean, variance, deviation, gradient
// means) are device arrays of `channels` floats.
#pragma once

#include <cstddef>

namespace xtrain::cuda {

struct BatchNormShape {
  int num = 0;
  int channels = 0;
  std::size_t spatial = 0;  // values per (sample, channel) plane
};

// batch_norm_param.scale_bias's blobs (device arrays of `channels` floats):
// all null without scale_bias; a diff is null when its gradient is not
// wanted (else the kernels add to it).
struct BatchNormScaleBias {
  const float* scale = nullptr;
  const float* bias = nullptr;
  float* scale_diff = nullptr;
  float* bias_diff = nullptr;
};

// Training statistics: mean and biased variance of each channel over its
// num * spatial values, by the grid-wide reduction of grid_reduction.cuh
// (in double; each tile's squared deviations from its own mean, the tiles'
// moments combined exactly in a fixed order: deterministic).
void batch_norm_statistics_gpu(const BatchNormShape& shape, const float* input, float* mean,
                               float* variance);

// Training: updates the stored blobs' running sums from mean and variance
// (RunningSums with fraction f and m = num * spatial). Then, in both modes,
// deviation = sqrt(var + eps); with use_global_stats, mean and variance are
// first read from the stored sums (stored_factor of weight[0]).
void batch_norm_finish_statistics_gpu(const BatchNormShape& shape, bool use_global_stats,
                                      float fraction, float eps, float* mean_sum,
                                      float* variance_sum, float* weight, float* mean,
                                      float* variance, float* deviation);

// y = normalize(input), into `kept` when not null; output = y, or
// scale_and_shift(y) with scale_bias (kept is then needed). In place allowed.
void batch_norm_normalize_gpu(const BatchNormShape& shape, const float* input, const float* mean,
                              const float* deviation, const BatchNormScaleBias& scale_bias,
                              float* output, float* kept);

// Backward with batch statistics: dy_mean = sum(dy) / m and dy_dot_y_mean =
// sum(dy * y) / m per channel (grid-wide, in double), with scale_bias also
// the sums into the scale's and bias's diffs, then dx = batch_gradient(...)
// (scaled_batch_gradient with scale_bias) when input_diff is not null. In
// place allowed.
void batch_norm_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                             const float* normalised, const float* deviation,
                             const BatchNormScaleBias& scale_bias, float* dy_mean,
                             float* dy_dot_y_mean, float* input_diff);

// Backward with the stored statistics: with scale_bias, first the sums
// sum(dy * y) and sum(dy) into the diffs wanted (the per-channel arrays
// dy_mean and dy_dot_y_mean as scratch; `normalised` is read only then);
// then dx = dy / deviation (times the scale with scale_bias) when
// input_diff is not null. In place allowed.
void batch_norm_global_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                                    const float* normalised, const float* deviation,
                                    const BatchNormScaleBias& scale_bias, float* dy_mean,
                                    float* dy_dot_y_mean, float* input_diff);

}  // namespace xtrain::cuda

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

// output = normalize(input); also into `kept` when not null. In place allowed.
void batch_norm_normalize_gpu(const BatchNormShape& shape, const float* input, const float* mean,
                              const float* deviation, float* output, float* kept);

// Backward with batch statistics: dy_mean = sum(dy) / m and dy_dot_y_mean =
// sum(dy * y) / m per channel (grid-wide, in double), then
// dx = batch_gradient(...). In place allowed.
void batch_norm_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                             const float* normalised, const float* deviation, float* dy_mean,
                             float* dy_dot_y_mean, float* input_diff);

// Backward with the stored statistics: dx = dy / deviation. In place allowed.
void batch_norm_global_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                                    const float* deviation, float* input_diff);

}  // namespace xtrain::cuda

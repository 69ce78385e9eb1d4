#include <cstdint>

#include "core/reduction_terms.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/grid_reduction.cuh"
#include "cuda/kernel_launch.cuh"
#include "layers/batch_norm_gpu_kernels.hpp"
#include "layers/batch_norm_math.hpp"

namespace xtrain::cuda {
namespace {

// The per-channel sums are the grid-wide reductions of grid_reduction.cuh
// over the (num, channels, spatial) array: many blocks per channel, the order
// of additions fixed by the shape, all in double.

// mean and biased variance from a channel's moments (NaN for no values, as
// on the CPU).
struct WriteMeanAndVariance {
  float* mean;
  float* variance;
  __device__ void operator()(std::size_t c, const reduction::Moments& moments) const {
    mean[c] = static_cast<float>(moments.mean());
    variance[c] = static_cast<float>(moments.variance());
  }
};

// sum(dy) / m and sum(dy * y) / m; with scale_bias the sums themselves are
// added to the bias's and the scale's diffs (as the CPU path does).
struct WriteGradientMeans {
  float* dy_mean;
  float* dy_dot_y_mean;
  double m;
  float* scale_diff;
  float* bias_diff;
  __device__ void operator()(std::size_t c, const reduction::SumAndDot& total) const {
    dy_mean[c] = static_cast<float>(total.sum / m);
    dy_dot_y_mean[c] = static_cast<float>(total.dot / m);
    if (scale_diff) scale_diff[c] += static_cast<float>(total.dot);
    if (bias_diff) bias_diff[c] += static_cast<float>(total.sum);
  }
};

reduction::ChannelTiling channel_tiling(const BatchNormShape& s) {
  return reduction::ChannelTiling::plan(static_cast<std::size_t>(s.num),
                                        static_cast<std::size_t>(s.channels), s.spatial);
}

// One thread per channel, one block. Thread 0 also updates the weight, after
// every thread has read it (global statistics read it; training does not).
__global__ void finish_kernel(BatchNormShape s, bool use_global_stats, batch_norm::RunningSums sums,
                              float eps, float* mean_sum, float* variance_sum, float* weight,
                              float* mean, float* variance, float* deviation) {
  const float factor = use_global_stats ? batch_norm::stored_factor(weight[0]) : 0.0f;
  for (int c = threadIdx.x; c < s.channels; c += blockDim.x) {
    if (use_global_stats) {
      mean[c] = factor * mean_sum[c];
      variance[c] = factor * variance_sum[c];
    } else {
      mean_sum[c] = sums.mean_sum(mean_sum[c], mean[c]);
      variance_sum[c] = sums.variance_sum(variance_sum[c], variance[c]);
    }
    deviation[c] = batch_norm::deviation(variance[c], eps);
  }
  if (!use_global_stats && threadIdx.x == 0) weight[0] = sums.weight(weight[0]);
}

__global__ void normalize_kernel(BatchNormShape s, std::int64_t count, const float* input,
                                 const float* mean, const float* deviation, float* output,
                                 float* kept) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    const float y = batch_norm::normalize(input[i], mean[c], deviation[c]);
    output[i] = y;
    if (kept) kept[i] = y;
  }
}

// scale_bias: kept = y, output = scale * y + bias.
__global__ void normalize_scale_bias_kernel(BatchNormShape s, std::int64_t count,
                                            const float* input, const float* mean,
                                            const float* deviation, const float* scale,
                                            const float* bias, float* output, float* kept) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    const float y = batch_norm::normalize(input[i], mean[c], deviation[c]);
    kept[i] = y;
    output[i] = batch_norm::scale_and_shift(y, scale[c], bias[c]);
  }
}

// `scale` null: without scale_bias.
__global__ void batch_gradient_kernel(BatchNormShape s, std::int64_t count,
                                      const float* output_diff, const float* normalised,
                                      const float* deviation, const float* scale,
                                      const float* dy_mean, const float* dy_dot_y_mean,
                                      float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    input_diff[i] =
        scale ? batch_norm::scaled_batch_gradient(output_diff[i], normalised[i], dy_mean[c],
                                                  dy_dot_y_mean[c], deviation[c], scale[c])
              : batch_norm::batch_gradient(output_diff[i], normalised[i], dy_mean[c],
                                           dy_dot_y_mean[c], deviation[c]);
  }
}

__global__ void global_gradient_kernel(BatchNormShape s, std::int64_t count,
                                       const float* output_diff, const float* deviation,
                                       const float* scale, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    input_diff[i] = scale
                        ? batch_norm::scaled_global_gradient(output_diff[i], deviation[c], scale[c])
                        : batch_norm::global_gradient(output_diff[i], deviation[c]);
  }
}

std::int64_t value_count(const BatchNormShape& s) {
  return static_cast<std::int64_t>(s.num) * s.channels * static_cast<std::int64_t>(s.spatial);
}

// The per-channel sums of dy and dy * y: their means into dy_mean and
// dy_dot_y_mean, the sums into the diffs wanted.
void gradient_sums(const BatchNormShape& shape, const float* output_diff, const float* normalised,
                   const BatchNormScaleBias& scale_bias, float* dy_mean, float* dy_dot_y_mean) {
  const double m = static_cast<double>(shape.num) * static_cast<double>(shape.spatial);
  reduce_per_channel(
      channel_tiling(shape),
      reduction::SingleSweep<reduction::SumAndDotOf>{{output_diff, normalised}},
      WriteGradientMeans{dy_mean, dy_dot_y_mean, m, scale_bias.scale_diff, scale_bias.bias_diff},
      stream());
}

}  // namespace

void batch_norm_statistics_gpu(const BatchNormShape& shape, const float* input, float* mean,
                               float* variance) {
  // Also with no values (m = 0): mean and variance come out 0 / 0 = NaN, as
  // on the CPU, instead of whatever the arrays held.
  if (shape.channels == 0) return;
  reduce_per_channel(channel_tiling(shape), reduction::MomentsOfTile{input},
                     WriteMeanAndVariance{mean, variance}, stream());
}

void batch_norm_finish_statistics_gpu(const BatchNormShape& shape, bool use_global_stats,
                                      float fraction, float eps, float* mean_sum,
                                      float* variance_sum, float* weight, float* mean,
                                      float* variance, float* deviation) {
  if (shape.channels == 0) return;
  const unsigned long long m =
      static_cast<unsigned long long>(shape.num) * static_cast<unsigned long long>(shape.spatial);
  const batch_norm::RunningSums sums{fraction, batch_norm::RunningSums::correction_for(m)};
  finish_kernel<<<1, kThreadsPerBlock, 0, stream()>>>(shape, use_global_stats, sums, eps, mean_sum,
                                                      variance_sum, weight, mean, variance,
                                                      deviation);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_normalize_gpu(const BatchNormShape& shape, const float* input, const float* mean,
                              const float* deviation, const BatchNormScaleBias& scale_bias,
                              float* output, float* kept) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  const int blocks = blocks_for(static_cast<std::size_t>(count));
  if (scale_bias.scale) {
    normalize_scale_bias_kernel<<<blocks, kThreadsPerBlock, 0, stream()>>>(
        shape, count, input, mean, deviation, scale_bias.scale, scale_bias.bias, output, kept);
  } else {
    normalize_kernel<<<blocks, kThreadsPerBlock, 0, stream()>>>(shape, count, input, mean,
                                                                deviation, output, kept);
  }
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                             const float* normalised, const float* deviation,
                             const BatchNormScaleBias& scale_bias, float* dy_mean,
                             float* dy_dot_y_mean, float* input_diff) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  gradient_sums(shape, output_diff, normalised, scale_bias, dy_mean, dy_dot_y_mean);
  if (!input_diff) return;
  // Same stream: runs after every channel's sums are written.
  batch_gradient_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                          stream()>>>(shape, count, output_diff, normalised, deviation,
                                      scale_bias.scale, dy_mean, dy_dot_y_mean, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_global_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                                    const float* normalised, const float* deviation,
                                    const BatchNormScaleBias& scale_bias, float* dy_mean,
                                    float* dy_dot_y_mean, float* input_diff) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  if (scale_bias.scale_diff || scale_bias.bias_diff) {
    gradient_sums(shape, output_diff, normalised, scale_bias, dy_mean, dy_dot_y_mean);
  }
  if (!input_diff) return;
  global_gradient_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                           stream()>>>(shape, count, output_diff, deviation, scale_bias.scale,
                                       input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace xtrain::cuda

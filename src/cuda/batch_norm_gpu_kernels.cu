#include <cstdint>

#include "cuda/batch_norm_gpu_kernels.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/batch_norm_math.hpp"

namespace xtrain::cuda {
namespace {

// The block reductions halve the block: kThreadsPerBlock is a power of two.
static_assert((kThreadsPerBlock & (kThreadsPerBlock - 1)) == 0);

// The sum of every thread's `value` in the block, returned to all threads.
// `shared` holds kThreadsPerBlock doubles.
__device__ double block_sum(double value, double* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreadsPerBlock / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared is reused by the next call
  return total;
}

// Value i of channel c's num * spatial values: sample i / spatial, position
// i % spatial.
__device__ std::int64_t channel_value_offset(const BatchNormShape& s, int c, std::int64_t i) {
  const std::int64_t n = i / static_cast<std::int64_t>(s.spatial);
  const std::int64_t at = i % static_cast<std::int64_t>(s.spatial);
  return (n * s.channels + c) * static_cast<std::int64_t>(s.spatial) + at;
}

// One block per channel (blockIdx.x).
__global__ void statistics_kernel(BatchNormShape s, const float* input, float* mean,
                                  float* variance) {
  __shared__ double shared[kThreadsPerBlock];
  const int c = blockIdx.x;
  const std::int64_t m = static_cast<std::int64_t>(s.num) * static_cast<std::int64_t>(s.spatial);
  double sum = 0;
  for (std::int64_t i = threadIdx.x; i < m; i += kThreadsPerBlock) {
    sum += input[channel_value_offset(s, c, i)];
  }
  const double channel_mean = block_sum(sum, shared) / static_cast<double>(m);
  double squares = 0;
  for (std::int64_t i = threadIdx.x; i < m; i += kThreadsPerBlock) {
    const double d = input[channel_value_offset(s, c, i)] - channel_mean;
    squares += d * d;
  }
  const double channel_squares = block_sum(squares, shared);
  if (threadIdx.x == 0) {
    mean[c] = static_cast<float>(channel_mean);
    variance[c] = static_cast<float>(channel_squares / static_cast<double>(m));
  }
}

// One block per channel: sum(dy) / m and sum(dy * y) / m.
__global__ void gradient_statistics_kernel(BatchNormShape s, const float* output_diff,
                                           const float* normalised, float* dy_mean,
                                           float* dy_dot_y_mean) {
  __shared__ double shared[kThreadsPerBlock];
  const int c = blockIdx.x;
  const std::int64_t m = static_cast<std::int64_t>(s.num) * static_cast<std::int64_t>(s.spatial);
  double sum = 0;
  double dot = 0;
  for (std::int64_t i = threadIdx.x; i < m; i += kThreadsPerBlock) {
    const std::int64_t at = channel_value_offset(s, c, i);
    sum += output_diff[at];
    dot += static_cast<double>(output_diff[at]) * normalised[at];
  }
  const double total = block_sum(sum, shared);
  const double dot_total = block_sum(dot, shared);
  if (threadIdx.x == 0) {
    dy_mean[c] = static_cast<float>(total / static_cast<double>(m));
    dy_dot_y_mean[c] = static_cast<float>(dot_total / static_cast<double>(m));
  }
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

__global__ void batch_gradient_kernel(BatchNormShape s, std::int64_t count,
                                      const float* output_diff, const float* normalised,
                                      const float* deviation, const float* dy_mean,
                                      const float* dy_dot_y_mean, float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    input_diff[i] = batch_norm::batch_gradient(output_diff[i], normalised[i], dy_mean[c],
                                               dy_dot_y_mean[c], deviation[c]);
  }
}

__global__ void global_gradient_kernel(BatchNormShape s, std::int64_t count,
                                       const float* output_diff, const float* deviation,
                                       float* input_diff) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const int c = static_cast<int>(i / static_cast<std::int64_t>(s.spatial) % s.channels);
    input_diff[i] = batch_norm::global_gradient(output_diff[i], deviation[c]);
  }
}

std::int64_t value_count(const BatchNormShape& s) {
  return static_cast<std::int64_t>(s.num) * s.channels * static_cast<std::int64_t>(s.spatial);
}

}  // namespace

void batch_norm_statistics_gpu(const BatchNormShape& shape, const float* input, float* mean,
                               float* variance) {
  // Also with no values (m = 0): mean and variance come out 0 / 0 = NaN, as
  // on the CPU, instead of whatever the arrays held.
  if (shape.channels == 0) return;
  statistics_kernel<<<shape.channels, kThreadsPerBlock, 0, stream()>>>(shape, input, mean,
                                                                       variance);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
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
                              const float* deviation, float* output, float* kept) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  normalize_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0, stream()>>>(
      shape, count, input, mean, deviation, output, kept);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                             const float* normalised, const float* deviation, float* dy_mean,
                             float* dy_dot_y_mean, float* input_diff) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  gradient_statistics_kernel<<<shape.channels, kThreadsPerBlock, 0, stream()>>>(
      shape, output_diff, normalised, dy_mean, dy_dot_y_mean);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
  // Same stream: runs after every channel's sums are written.
  batch_gradient_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                          stream()>>>(shape, count, output_diff, normalised, deviation, dy_mean,
                                      dy_dot_y_mean, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_global_backward_gpu(const BatchNormShape& shape, const float* output_diff,
                                    const float* deviation, float* input_diff) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  global_gradient_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                           stream()>>>(shape, count, output_diff, deviation, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace xtrain::cuda

#include <cstdint>

#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/lrn_gpu_kernels.hpp"
#include "layers/lrn_math.hpp"

namespace xtrain::cuda {
namespace {

__global__ void square_kernel(std::int64_t count, const float* input, float* squares) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) { squares[i] = input[i] * input[i]; }
}

// Value i lies in plane i / (height * width) at (y, x).
__global__ void within_scale_kernel(std::int64_t count, int height, int width, int radius,
                                    float alpha, float window_area, float beta, const float* input,
                                    const float* squares, float* scale, float* power,
                                    float* output) {
  const std::int64_t plane = static_cast<std::int64_t>(height) * width;
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const std::int64_t at = i % plane;
    const int y = static_cast<int>(at / width);
    const int x = static_cast<int>(at % width);
    const float sum = lrn_math::window_sum_at(squares + (i - at), height, width, radius, y, x);
    const float s = lrn_math::within_channel_scale(sum, alpha, window_area);
    const float p = beta == 0.75f ? lrn_math::power_three_quarters(s) : lrn_math::power(s, beta);
    scale[i] = s;
    power[i] = p;
    output[i] = input[i] * p;
  }
}

__global__ void ratio_kernel(std::int64_t count, const float* output, const float* output_diff,
                             const float* scale, float* ratios) {
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    ratios[i] = lrn_math::gradient_ratio(output_diff[i], output[i], scale[i]);
  }
}

__global__ void within_backward_kernel(std::int64_t count, int height, int width, int radius,
                                       float factor, const float* input, const float* output_diff,
                                       const float* power, const float* ratios, float* input_diff) {
  const std::int64_t plane = static_cast<std::int64_t>(height) * width;
  XTRAIN_GRID_STRIDE_LOOP(i, count) {
    const std::int64_t at = i % plane;
    const int y = static_cast<int>(at / width);
    const int x = static_cast<int>(at % width);
    const float sum = lrn_math::window_sum_at(ratios + (i - at), height, width, radius, y, x);
    const float direct = output_diff[i] * power[i];
    input_diff[i] = lrn_math::subtract_window_term(direct, factor, input[i], sum);
  }
}

std::int64_t value_count(const LrnShape& s) {
  return static_cast<std::int64_t>(s.num) * s.channels * s.height * s.width;
}

}  // namespace

void lrn_within_channel_forward_gpu(const LrnParameters& lrn, const LrnShape& shape,
                                    const float* input, float* squares, float* scale, float* power,
                                    float* output) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  square_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0, stream()>>>(
      count, input, squares);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
  // As the CPU: window_area = n^2 in float, radius (n - 1) / 2.
  within_scale_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                        stream()>>>(count, shape.height, shape.width, (lrn.size - 1) / 2, lrn.alpha,
                                    static_cast<float>(lrn.size * lrn.size), lrn.beta, input,
                                    squares, scale, power, output);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void lrn_within_channel_backward_gpu(const LrnParameters& lrn, const LrnShape& shape,
                                     const float* input, const float* output,
                                     const float* output_diff, const float* scale,
                                     const float* power, float* ratios, float* input_diff) {
  const std::int64_t count = value_count(shape);
  if (count == 0) return;
  ratio_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0, stream()>>>(
      count, output, output_diff, scale, ratios);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
  const float factor = 2.0f * lrn.alpha * lrn.beta / static_cast<float>(lrn.size * lrn.size);
  within_backward_kernel<<<blocks_for(static_cast<std::size_t>(count)), kThreadsPerBlock, 0,
                           stream()>>>(count, shape.height, shape.width, (lrn.size - 1) / 2, factor,
                                       input, output_diff, power, ratios, input_diff);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

}  // namespace xtrain::cuda

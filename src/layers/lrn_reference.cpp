// The reference LRN kernels: Caffe's loops, one image (or plane) at a time.
// The test oracle of the fast kernels in lrn_kernels.cpp.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "layers/lrn_kernels.hpp"
#include "layers/lrn_math.hpp"
#include "layers/lrn_steps.hpp"

namespace xtrain {
namespace {

void add_scaled(float factor, const float* source, std::size_t count, float* target) {
  for (std::size_t i = 0; i < count; ++i) target[i] += factor * source[i];
}

// scale = k + alpha / n * (sum of squares over the channel window), as a
// running sum over zero-padded channels: add the channel entering the window,
// drop the one leaving.
void across_channel_scale(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                          float* scale) {
  const int pre_pad = (lrn.size - 1) / 2;
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t image = shape.channels * plane;
  const float alpha_over_size = lrn.alpha / static_cast<float>(lrn.size);
  std::vector<float> padded((shape.channels + lrn.size - 1) * plane, 0.0f);
  auto channel = [&](int padded_channel) { return padded.data() + padded_channel * plane; };
  for (int n = 0; n < shape.num; ++n) {
    const float* x = input + n * image;
    float* squares = channel(pre_pad);
    for (std::size_t i = 0; i < image; ++i) squares[i] = x[i] * x[i];
    float* image_scale = scale + n * image;
    std::fill(image_scale, image_scale + plane, lrn.k);
    for (int c = 0; c < lrn.size - 1; ++c)
      add_scaled(alpha_over_size, channel(c), plane, image_scale);
    for (int c = 0; c < shape.channels; ++c) {
      float* current = image_scale + c * plane;
      if (c > 0) {
        std::copy(current - plane, current, current);
        add_scaled(-alpha_over_size, channel(c - 1), plane, current);
      }
      add_scaled(alpha_over_size, channel(c + lrn.size - 1), plane, current);
    }
  }
}

// dbottom -= 2 alpha beta / n * bottom * (channel window sum of
// dtop * top / scale).
void across_channel_backward(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                             const float* output, const float* output_diff, const float* scale,
                             float* input_diff) {
  const int pre_pad = (lrn.size - 1) / 2;
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t image = shape.channels * plane;
  const float factor = 2.0f * lrn.alpha * lrn.beta / static_cast<float>(lrn.size);
  std::vector<float> padded((shape.channels + lrn.size - 1) * plane, 0.0f);
  std::vector<float> accumulated(plane);
  auto channel = [&](int padded_channel) { return padded.data() + padded_channel * plane; };
  for (int n = 0; n < shape.num; ++n) {
    const std::size_t offset = n * image;
    float* ratio = channel(pre_pad);
    for (std::size_t i = 0; i < image; ++i) {
      ratio[i] = output_diff[offset + i] * output[offset + i] / scale[offset + i];
    }
    std::fill(accumulated.begin(), accumulated.end(), 0.0f);
    for (int c = 0; c < lrn.size - 1; ++c) add_scaled(1.0f, channel(c), plane, accumulated.data());
    for (int c = 0; c < shape.channels; ++c) {
      add_scaled(1.0f, channel(c + lrn.size - 1), plane, accumulated.data());
      const float* x = input + offset + c * plane;
      float* dx = input_diff + offset + c * plane;
      for (std::size_t i = 0; i < plane; ++i) dx[i] -= factor * x[i] * accumulated[i];
      add_scaled(-1.0f, channel(c), plane, accumulated.data());
    }
  }
}

}  // namespace

void lrn_window_sum(const float* in, int height, int width, int radius, float* rows, float* out) {
  for (int y = 0; y < height; ++y) {
    const float* line = in + y * width;
    float* sum = rows + y * width;
    std::copy(line, line + width, sum);
    for (int d = 1; d <= radius && d < width; ++d) {
      for (int x = 0; x < width - d; ++x) sum[x] += line[x + d];
      for (int x = d; x < width; ++x) sum[x] += line[x - d];
    }
  }
  for (int y = 0; y < height; ++y) {
    const int begin = std::max(y - radius, 0);
    const int end = std::min(y + radius, height - 1);
    float* line = out + y * width;
    std::copy(rows + begin * width, rows + (begin + 1) * width, line);
    for (int i = begin + 1; i <= end; ++i) {
      const float* source = rows + i * width;
      for (int x = 0; x < width; ++x) line[x] += source[x];
    }
  }
}

void lrn_power(float beta, const float* scale, std::size_t count, float* power) {
  if (beta == 0.75f) {
    // scale^-0.75 = 1 / (sqrt(s) * sqrt(sqrt(s))): two square roots (vector
    // instructions under -fno-math-errno) beat pow().
    for (std::size_t i = 0; i < count; ++i) power[i] = lrn_math::power_three_quarters(scale[i]);
  } else {
    for (std::size_t i = 0; i < count; ++i) power[i] = lrn_math::power(scale[i], beta);
  }
}

void lrn_within_channel_scale_plane(const LrnParameters& lrn, int height, int width,
                                    const float* input, float* squares, float* rows, float* scale) {
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  const float window_area = static_cast<float>(lrn.size * lrn.size);
  for (std::size_t i = 0; i < plane; ++i) squares[i] = input[i] * input[i];
  lrn_window_sum(squares, height, width, (lrn.size - 1) / 2, rows, scale);
  for (std::size_t i = 0; i < plane; ++i) {
    scale[i] = lrn_math::within_channel_scale(scale[i], lrn.alpha, window_area);
  }
}

void lrn_within_channel_backward_plane(const LrnParameters& lrn, int height, int width,
                                       const float* input, const float* output,
                                       const float* output_diff, const float* scale, float* ratios,
                                       float* rows, float* sums, float* input_diff) {
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  const float factor = 2.0f * lrn.alpha * lrn.beta / static_cast<float>(lrn.size * lrn.size);
  for (std::size_t i = 0; i < plane; ++i) {
    ratios[i] = lrn_math::gradient_ratio(output_diff[i], output[i], scale[i]);
  }
  lrn_window_sum(ratios, height, width, (lrn.size - 1) / 2, rows, sums);
  for (std::size_t i = 0; i < plane; ++i) {
    input_diff[i] = lrn_math::subtract_window_term(input_diff[i], factor, input[i], sums[i]);
  }
}

void lrn_forward_reference(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                           float* scale, float* power, float* output) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t count = static_cast<std::size_t>(shape.num) * shape.channels * plane;
  if (lrn.across_channels) {
    across_channel_scale(lrn, shape, input, scale);
  } else {
    std::vector<float> squares(plane), rows(plane);
    for (std::size_t p = 0; p < count / std::max<std::size_t>(plane, 1); ++p) {
      lrn_within_channel_scale_plane(lrn, shape.height, shape.width, input + p * plane,
                                     squares.data(), rows.data(), scale + p * plane);
    }
  }
  lrn_power(lrn.beta, scale, count, power);
  for (std::size_t i = 0; i < count; ++i) output[i] = input[i] * power[i];
}

void lrn_backward_reference(const LrnParameters& lrn, const LrnShape& shape, const float* input,
                            const float* output, const float* output_diff, const float* scale,
                            const float* power, float* input_diff) {
  const std::size_t plane = static_cast<std::size_t>(shape.height) * shape.width;
  const std::size_t count = static_cast<std::size_t>(shape.num) * shape.channels * plane;
  for (std::size_t i = 0; i < count; ++i) input_diff[i] = output_diff[i] * power[i];
  if (lrn.across_channels) {
    across_channel_backward(lrn, shape, input, output, output_diff, scale, input_diff);
  } else {
    std::vector<float> ratios(plane), rows(plane), sums(plane);
    for (std::size_t p = 0; p < count / std::max<std::size_t>(plane, 1); ++p) {
      const std::size_t at = p * plane;
      lrn_within_channel_backward_plane(lrn, shape.height, shape.width, input + at, output + at,
                                        output_diff + at, scale + at, ratios.data(), rows.data(),
                                        sums.data(), input_diff + at);
    }
  }
}

}  // namespace xtrain

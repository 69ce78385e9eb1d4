// BatchNorm's channel-parallel CPU path against the plain loops it replaced
// (Caffe 1.0's sweeps: means by channel, subtract, square, divide), forward
// and backward, batch and stored statistics, in place and not, on odd shapes;
// and the same bits with one thread and two. With scale_bias (NVIDIA Caffe's
// learned scale and bias) against the same reference followed by the scale
// and shift.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fast_path_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

// The reference: BatchNorm's former CPU code on an (N, C, S) array.
struct ReferenceBatchNorm {
  int num = 0, channels = 0;
  std::size_t spatial = 0;
  float eps = 1e-5f;
  std::vector<float> mean, variance, deviation, normalised;

  ReferenceBatchNorm(const Blob& input, float eps_value) : eps(eps_value) {
    num = input.shape(0);
    channels = input.num_axes() == 1 ? 1 : input.shape(1);
    spatial = input.count() / (static_cast<std::size_t>(num) * channels);
  }

  template <typename Visit>
  void for_each_value(Visit visit) const {
    std::size_t i = 0;
    for (int n = 0; n < num; ++n) {
      for (int c = 0; c < channels; ++c) {
        for (std::size_t s = 0; s < spatial; ++s, ++i) visit(i, c);
      }
    }
  }

  std::vector<float> channel_means(const std::vector<float>& a, const std::vector<float>* b) const {
    std::vector<double> totals(channels, 0.0);
    for_each_value(
        [&](std::size_t i, int c) { totals[c] += b ? static_cast<double>(a[i]) * (*b)[i] : a[i]; });
    std::vector<float> means(channels);
    for (int c = 0; c < channels; ++c) means[c] = static_cast<float>(totals[c] / (num * spatial));
    return means;
  }

  std::vector<float> forward_batch(const std::vector<float>& input) {
    mean = channel_means(input, nullptr);
    std::vector<float> output(input.size());
    for_each_value([&](std::size_t i, int c) { output[i] = input[i] - mean[c]; });
    variance = channel_means(output, &output);
    finish_forward(&output);
    return output;
  }

  std::vector<float> forward_global(const std::vector<float>& input, const std::vector<float>& sums,
                                    const std::vector<float>& square_sums, float weight) {
    const float factor = weight == 0 ? 0.0f : 1.0f / weight;
    mean.assign(channels, 0);
    variance.assign(channels, 0);
    for (int c = 0; c < channels; ++c) {
      mean[c] = factor * sums[c];
      variance[c] = factor * square_sums[c];
    }
    std::vector<float> output(input.size());
    for_each_value([&](std::size_t i, int c) { output[i] = input[i] - mean[c]; });
    finish_forward(&output);
    return output;
  }

  void finish_forward(std::vector<float>* output) {
    deviation.assign(channels, 0);
    for (int c = 0; c < channels; ++c) deviation[c] = std::sqrt(variance[c] + eps);
    for_each_value([&](std::size_t i, int c) { (*output)[i] /= deviation[c]; });
    normalised = *output;
  }

  std::vector<float> backward(const std::vector<float>& output_diff, bool global) const {
    std::vector<float> input_diff(output_diff.size());
    if (global) {
      for_each_value([&](std::size_t i, int c) { input_diff[i] = output_diff[i] / deviation[c]; });
      return input_diff;
    }
    const std::vector<float> diff_mean = channel_means(output_diff, nullptr);
    const std::vector<float> diff_dot_y_mean = channel_means(output_diff, &normalised);
    for_each_value([&](std::size_t i, int c) {
      input_diff[i] =
          (output_diff[i] - diff_mean[c] - normalised[i] * diff_dot_y_mean[c]) / deviation[c];
    });
    return input_diff;
  }
};

struct Case {
  std::vector<int> shape;
  bool global;
  bool in_place;
  bool scale_bias = false;
};

// top = scale[c] * y + bias[c] after the reference; backward: the scale's
// and bias's sums, and the reference's bottom gradient of scale[c] * dtop.
struct ReferenceScaleBias {
  std::vector<float> scale, bias;

  std::vector<float> forward(const ReferenceBatchNorm& bn, std::vector<float> normalised) const {
    bn.for_each_value(
        [&](std::size_t i, int c) { normalised[i] = scale[c] * normalised[i] + bias[c]; });
    return normalised;
  }
  std::vector<float> scaled_diff(const ReferenceBatchNorm& bn,
                                 std::vector<float> output_diff) const {
    bn.for_each_value([&](std::size_t i, int c) { output_diff[i] *= scale[c]; });
    return output_diff;
  }
  // sum(dtop * y) and sum(dtop) per channel.
  void gradients(const ReferenceBatchNorm& bn, const std::vector<float>& output_diff,
                 std::vector<float>* scale_diff, std::vector<float>* bias_diff) const {
    std::vector<double> dot(bn.channels, 0.0), sum(bn.channels, 0.0);
    bn.for_each_value([&](std::size_t i, int c) {
      dot[c] += static_cast<double>(output_diff[i]) * bn.normalised[i];
      sum[c] += output_diff[i];
    });
    scale_diff->assign(dot.begin(), dot.end());
    bias_diff->assign(sum.begin(), sum.end());
  }
};

class BatchNormFastPathTest : public ::testing::TestWithParam<Case> {};

// Forward twice (the running sums build up), then backward, against the
// reference; the tolerance allows for summation order, though today the
// bits agree.
TEST_P(BatchNormFastPathTest, MatchesTheReference) {
  const Case& c = GetParam();
  const float eps = 1e-3f;
  const float fraction = 0.9f;
  auto layer = make_layer(std::string("name: 'bn' type: 'BatchNorm' batch_norm_param { ") +
                          "use_global_stats: " + (c.global ? "true" : "false") +
                          " eps: 0.001 moving_average_fraction: 0.9" +
                          (c.scale_bias ? " scale_bias: true" : "") + " }");
  Blob input(c.shape);
  Blob separate_output;
  Blob* output = c.in_place ? &input : &separate_output;
  fill_uniform(input, 11, -2.0f, 3.0f);
  layer->setup({&input}, {output});
  const int channels = layer->blobs()[0]->count();
  std::vector<float> sums(channels), square_sums(channels);
  float weight = 0;
  if (c.global) {
    fill_uniform(*layer->blobs()[0], 12, -1.0f, 1.0f);
    fill_uniform(*layer->blobs()[1], 13, 0.5f, 2.0f);
    layer->blobs()[2]->mutable_cpu_data()[0] = weight = 1.7f;
    sums = data_of(*layer->blobs()[0]);
    square_sums = data_of(*layer->blobs()[1]);
  }
  ReferenceBatchNorm reference(input, eps);
  ReferenceScaleBias scale_bias;
  if (c.scale_bias) {
    fill_uniform(*layer->blobs()[3], 14, -2.0f, 2.0f);
    fill_uniform(*layer->blobs()[4], 15, -1.0f, 1.0f);
    scale_bias.scale = data_of(*layer->blobs()[3]);
    scale_bias.bias = data_of(*layer->blobs()[4]);
  }
  std::vector<float> expected;
  for (int pass = 0; pass < 2; ++pass) {
    fill_uniform(input, 20 + pass, -2.0f, 3.0f);
    const std::vector<float> x = data_of(input);
    layer->forward({&input}, {output});
    if (c.global) {
      expected = reference.forward_global(x, sums, square_sums, weight);
    } else {
      expected = reference.forward_batch(x);
      const std::size_t m = x.size() / channels;
      const float correction = m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
      weight = weight * fraction + 1.0f;
      for (int k = 0; k < channels; ++k) {
        sums[k] = reference.mean[k] + fraction * sums[k];
        square_sums[k] = correction * reference.variance[k] + fraction * square_sums[k];
      }
    }
    if (c.scale_bias) expected = scale_bias.forward(reference, expected);
    expect_close(data_of(*output), expected, 1e-5f, "top");
    expect_close(data_of(*layer->blobs()[0]), sums, 1e-5f, "mean sums");
    expect_close(data_of(*layer->blobs()[1]), square_sums, 1e-5f, "variance sums");
    EXPECT_FLOAT_EQ(layer->blobs()[2]->cpu_data()[0], weight);
  }
  fill_uniform(*output, 30);
  const std::vector<float> output_diff = data_of(*output);
  std::copy(output_diff.begin(), output_diff.end(), output->mutable_cpu_diff());
  layer->backward({output}, {true}, {&input});
  if (!c.scale_bias) {
    expect_close(diff_of(input), reference.backward(output_diff, c.global), 1e-4f, "bottom diff");
    return;
  }
  expect_close(diff_of(input),
               reference.backward(scale_bias.scaled_diff(reference, output_diff), c.global), 1e-4f,
               "bottom diff");
  std::vector<float> scale_diff, bias_diff;
  scale_bias.gradients(reference, output_diff, &scale_diff, &bias_diff);
  expect_close(diff_of(*layer->blobs()[3]), scale_diff, 1e-4f, "scale diff");
  expect_close(diff_of(*layer->blobs()[4]), bias_diff, 1e-4f, "bias diff");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchNormFastPathTest,
    ::testing::Values(Case{{2, 3, 4, 5}, false, false}, Case{{2, 3, 4, 5}, true, false},
                      Case{{1, 7, 13, 11}, false, true}, Case{{1, 7, 13, 11}, true, true},
                      Case{{16, 5, 1, 1}, false, false}, Case{{3, 4}, false, true},
                      Case{{5}, false, false}, Case{{4, 9, 37, 29}, false, true},
                      Case{{4, 9, 37, 29}, true, false}, Case{{3, 65, 7, 7}, false, false},
                      Case{{2, 3, 4, 5}, false, false, true}, Case{{2, 3, 4, 5}, true, true, true},
                      Case{{1, 7, 13, 11}, false, true, true}, Case{{3, 4}, true, false, true},
                      Case{{4, 9, 37, 29}, false, false, true}));

TEST(BatchNormFastPath, SameBitsForOneAndTwoThreads) {
  for (const bool global : {false, true}) {
    testing::expect_same_for_thread_counts([global] {
      auto layer = make_layer(std::string("name: 'bn' type: 'BatchNorm' batch_norm_param { ") +
                              "use_global_stats: " + (global ? "true" : "false") + " }");
      Blob input(std::vector<int>{4, 9, 37, 29});
      Blob output;
      fill_uniform(input, 5, -2.0f, 3.0f);
      layer->setup({&input}, {&output});
      if (global) {
        fill_uniform(*layer->blobs()[1], 6, 0.5f, 2.0f);
        layer->blobs()[2]->mutable_cpu_data()[0] = 1;
      }
      layer->forward({&input}, {&output});
      std::vector<float> results = data_of(output);
      Blob weights(output.shape());
      fill_uniform(weights, 7);
      std::copy(weights.cpu_data(), weights.cpu_data() + weights.count(),
                output.mutable_cpu_diff());
      layer->backward({&output}, {true}, {&input});
      for (const auto& blob : layer->blobs()) {
        const auto stats = data_of(*blob);
        results.insert(results.end(), stats.begin(), stats.end());
      }
      const auto diff = diff_of(input);
      results.insert(results.end(), diff.begin(), diff.end());
      return results;
    });
  }
}

}  // namespace
}  // namespace xtrain

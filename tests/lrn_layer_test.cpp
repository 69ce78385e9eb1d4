// LRN: both normalisation regions against a direct reference and by hand,
// gradients, and bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct LrnSettings {
  int size = 5;
  float alpha = 1.0f;
  float beta = 0.75f;
  float k = 1.0f;
  bool across = true;
};

std::string lrn_text(const LrnSettings& s) {
  return "name: 'norm' type: 'LRN' lrn_param { local_size: " + std::to_string(s.size) +
         " alpha: " + std::to_string(s.alpha) + " beta: " + std::to_string(s.beta) +
         " k: " + std::to_string(s.k) +
         " norm_region: " + (s.across ? "ACROSS_CHANNELS" : "WITHIN_CHANNEL") + " }";
}

// The definition, value by value, in double.
std::vector<float> reference_lrn(const Blob& input, const LrnSettings& s) {
  const int num = input.shape(0), channels = input.shape(1);
  const int height = input.shape(2), width = input.shape(3);
  const int half = (s.size - 1) / 2;
  const float* x = input.cpu_data();
  auto at = [&](int n, int c, int h, int w) {
    return static_cast<double>(x[((n * channels + c) * height + h) * width + w]);
  };
  std::vector<float> out;
  for (int n = 0; n < num; ++n) {
    for (int c = 0; c < channels; ++c) {
      for (int h = 0; h < height; ++h) {
        for (int w = 0; w < width; ++w) {
          double sum = 0;
          double scale = 0;
          if (s.across) {
            for (int cc = std::max(0, c - half); cc <= std::min(channels - 1, c + half); ++cc) {
              sum += at(n, cc, h, w) * at(n, cc, h, w);
            }
            scale = s.k + s.alpha / s.size * sum;
          } else {
            for (int hh = std::max(0, h - half); hh <= std::min(height - 1, h + half); ++hh) {
              for (int ww = std::max(0, w - half); ww <= std::min(width - 1, w + half); ++ww) {
                sum += at(n, c, hh, ww) * at(n, c, hh, ww);
              }
            }
            scale = 1.0 + s.alpha * sum / (s.size * s.size);
          }
          out.push_back(static_cast<float>(at(n, c, h, w) * std::pow(scale, -s.beta)));
        }
      }
    }
  }
  return out;
}

class LRNTest : public ::testing::Test {
 protected:
  void check_forward(const LrnSettings& settings, const std::vector<int>& shape) {
    input_.reshape(shape);
    fill_uniform(input_, 11, -2.0f, 2.0f);
    auto layer = make_layer(lrn_text(settings));
    layer->setup({&input_}, {&output_});
    ASSERT_EQ(output_.shape(), shape);
    layer->forward({&input_}, {&output_});
    testing::expect_near_all(data_of(output_), reference_lrn(input_, settings), 1e-5f);
  }

  // Finite differences on an input of `shape` filled from U(-1, 1) by `seed`.
  void check_gradient(const LrnSettings& settings, const std::vector<int>& shape,
                      std::uint64_t seed) {
    input_.reshape(shape);
    fill_uniform(input_, seed);
    auto layer = make_layer(lrn_text(settings));
    layer->setup({&input_}, {&output_});
    testing::GradientChecker().check(*layer, {&input_}, {&output_});
  }

  Blob input_;
  Blob output_;
};

XTRAIN_DEVICE_TEST_F(LRNTest, AcrossChannelsByHand) {
  // One pixel, channels 1, 2, 3; n = 3, alpha = 3, beta = 1, k = 1:
  //   c0: 1 + 3/3 * (1 + 4)     = 6   -> 1/6
  //   c1: 1 + 3/3 * (1 + 4 + 9) = 15  -> 2/15
  //   c2: 1 + 3/3 * (4 + 9)     = 14  -> 3/14
  input_.reshape({1, 3, 1, 1});
  set_data(input_, {1, 2, 3});
  auto layer =
      make_layer("name: 'norm' type: 'LRN' lrn_param { local_size: 3 alpha: 3 beta: 1 k: 1 }");
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  EXPECT_FLOAT_EQ(output_.cpu_data()[0], 1.0f / 6);
  EXPECT_FLOAT_EQ(output_.cpu_data()[1], 2.0f / 15);
  EXPECT_FLOAT_EQ(output_.cpu_data()[2], 3.0f / 14);
}

XTRAIN_DEVICE_TEST_F(LRNTest, WithinChannelByHandIgnoresK) {
  // A 2x2 plane: every 3x3 window (clipped) holds all four values, sum of
  // squares 30; scale = 1 + 9 * 30 / 9 = 31 (k plays no part, as in Caffe).
  input_.reshape({1, 1, 2, 2});
  set_data(input_, {1, 2, 3, 4});
  auto layer = make_layer(
      "name: 'norm' type: 'LRN' lrn_param { local_size: 3 alpha: 9 beta: 1 k: 5 "
      "norm_region: WITHIN_CHANNEL }");
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(output_.cpu_data()[i], (i + 1) / 31.0f);
}

XTRAIN_DEVICE_TEST_F(LRNTest, AcrossChannelsMatchesReference) {
  check_forward({}, {2, 7, 3, 4});  // AlexNet's settings, more channels than n
  check_forward({3, 0.5f, 0.6f, 2.0f, true}, {2, 2, 3, 3});   // fewer channels than n, other beta
  check_forward({1, 2.0f, 0.75f, 1.0f, true}, {1, 3, 3, 3});  // n = 1, count not a multiple of 4
}

XTRAIN_DEVICE_TEST_F(LRNTest, WithinChannelMatchesReference) {
  check_forward({3, 1.0f, 0.75f, 1.0f, false}, {2, 2, 5, 4});
  check_forward({5, 2.0f, 0.5f, 1.0f, false}, {1, 2, 3, 7});  // window wider than the plane
}

XTRAIN_DEVICE_TEST_F(LRNTest, ReshapesWithTheInput) {
  const LrnSettings settings;
  input_.reshape({1, 3, 2, 2});
  auto layer = make_layer(lrn_text(settings));
  layer->setup({&input_}, {&output_});
  input_.reshape({2, 6, 3, 3});
  fill_uniform(input_, 5);
  layer->forward({&input_}, {&output_});
  testing::expect_near_all(data_of(output_), reference_lrn(input_, settings), 1e-5f);
}

XTRAIN_DEVICE_TEST_F(LRNTest, GradientAcrossChannels) { check_gradient({}, {2, 7, 3, 3}, 3); }

XTRAIN_DEVICE_TEST_F(LRNTest, GradientAcrossChannelsOtherBetaAndK) {
  check_gradient({3, 2.0f, 0.6f, 1.5f, true}, {1, 4, 2, 3}, 4);
}

XTRAIN_DEVICE_TEST_F(LRNTest, GradientWithinChannel) {
  check_gradient({3, 2.0f, 0.75f, 1.0f, false}, {2, 2, 4, 5}, 6);
}

TEST_F(LRNTest, RejectsEvenSizeWrongAxesAndInPlace) {
  input_.reshape({1, 3, 2, 2});
  expect_error(
      [&] {
        make_layer("name: 'norm' type: 'LRN' lrn_param { local_size: 4 }")
            ->setup({&input_}, {&output_});
      },
      {"layer 'norm' (LRN)", "local_size must be odd", "4"});
  Blob flat({2, 3, 4});
  expect_error([&] { make_layer(lrn_text({}))->setup({&flat}, {&output_}); },
               {"layer 'norm' (LRN)", "4 axes", "2 3 4"});
  expect_error([&] { make_layer(lrn_text({}))->setup({&input_}, {&input_}); },
               {"layer 'norm' (LRN)", "in place"});
}

}  // namespace
}  // namespace xtrain

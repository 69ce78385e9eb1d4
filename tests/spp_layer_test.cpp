// SPP: Caffe's bin geometry against a direct reference, values by hand,
// output shapes (one level keeps 4 axes), changing input sizes, gradients and
// the inputs Caffe's pooling rejects.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::string spp_text(int height, bool max) {
  return "name: 'spp' type: 'SPP' spp_param { pyramid_height: " + std::to_string(height) +
         " pool: " + (max ? "MAX" : "AVE") + " }";
}

// Per image, level by level, channel by channel, bin by bin: Caffe's
// kernel = ceil(in / bins), pad = (kernel * bins - in + 1) / 2, stride =
// kernel; AVE divides by the window clipped to the padded input.
std::vector<float> reference_spp(const Blob& input, int levels, bool max) {
  const int num = input.shape(0), channels = input.shape(1);
  const int height = input.shape(2), width = input.shape(3);
  std::vector<float> out;
  for (int n = 0; n < num; ++n) {
    for (int l = 0; l < levels; ++l) {
      const int bins = 1 << l;
      const int kh = (height + bins - 1) / bins, kw = (width + bins - 1) / bins;
      const int ph = (kh * bins - height + 1) / 2, pw = (kw * bins - width + 1) / 2;
      for (int c = 0; c < channels; ++c) {
        for (int i = 0; i < bins; ++i) {
          for (int j = 0; j < bins; ++j) {
            const int y0 = i * kh - ph, x0 = j * kw - pw;
            const int y1 = std::min(y0 + kh, height + ph), x1 = std::min(x0 + kw, width + pw);
            const int divisor = (y1 - y0) * (x1 - x0);
            double best = -FLT_MAX, sum = 0;
            for (int y = std::max(y0, 0); y < std::min(y1, height); ++y) {
              for (int x = std::max(x0, 0); x < std::min(x1, width); ++x) {
                const double v = input.cpu_data()[input.offset(n, c, y, x)];
                best = std::max(best, v);
                sum += v;
              }
            }
            out.push_back(static_cast<float>(max ? best : sum / divisor));
          }
        }
      }
    }
  }
  return out;
}

class SPPTest : public ::testing::Test {
 protected:
  void check(int levels, bool max, const std::vector<int>& shape) {
    SCOPED_TRACE(spp_text(levels, max) + " on " + shape_to_string(shape));
    input_.reshape(shape);
    fill_uniform(input_, 4);
    auto layer = make_layer(spp_text(levels, max));
    layer->setup({&input_}, {&output_});
    const int per_channel = ((1 << (2 * levels)) - 1) / 3;  // sum of 4^l
    if (levels > 1) {
      ASSERT_EQ(output_.shape(), (std::vector<int>{shape[0], shape[1] * per_channel}));
    }
    layer->forward({&input_}, {&output_});
    expect_near_all(data_of(output_), reference_spp(input_, levels, max), 1e-6f);
  }

  Blob input_;
  Blob output_;
};

XTRAIN_DEVICE_TEST_F(SPPTest, ByHand) {
  // 0..15 in a 4x4 plane; level 1 has 2x2 bins of 2x2 pixels, no padding.
  input_.reshape({1, 1, 4, 4});
  std::iota(input_.mutable_cpu_data(), input_.mutable_cpu_data() + 16, 0.0f);
  auto max = make_layer(spp_text(2, true));
  max->setup({&input_}, {&output_});
  max->forward({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 5}));
  expect_near_all(data_of(output_), {15, 5, 7, 13, 15}, 0);
  auto ave = make_layer(spp_text(2, false));
  ave->setup({&input_}, {&output_});
  ave->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), {7.5f, 2.5f, 4.5f, 10.5f, 12.5f}, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(SPPTest, MatchesCaffesBinGeometry) {
  check(3, true, {2, 3, 9, 7});  // padded bins on both axes
  check(3, false, {2, 3, 9, 7});
  check(2, false, {1, 2, 5, 3});  // odd remainders: padding 1 and 1
  check(4, true, {1, 1, 16, 15});
}

XTRAIN_DEVICE_TEST_F(SPPTest, OneLevelKeepsFourAxes) {
  input_.reshape({2, 3, 5, 4});
  fill_uniform(input_, 2);
  auto layer = make_layer(spp_text(1, true));
  layer->setup({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{2, 3, 1, 1}));
  layer->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference_spp(input_, 1, true), 0);
}

XTRAIN_DEVICE_TEST_F(SPPTest, SameLengthForAnyInputSize) {
  input_.reshape({1, 2, 8, 8});
  fill_uniform(input_, 3);
  auto layer = make_layer(spp_text(3, true));
  layer->setup({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 42}));
  input_.reshape({2, 2, 11, 14});
  fill_uniform(input_, 5);
  layer->forward({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{2, 42}));
  expect_near_all(data_of(output_), reference_spp(input_, 3, true), 0);
}

XTRAIN_DEVICE_TEST_F(SPPTest, GradientMax) {
  input_.reshape({2, 2, 6, 7});
  fill_uniform(input_, 6);
  auto layer = make_layer(spp_text(3, true));
  layer->setup({&input_}, {&output_});
  testing::GradientCheckOptions options;
  options.step = 1e-3f;
  options.threshold = 1e-2f;
  testing::GradientChecker(options).check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(SPPTest, GradientAverage) {
  input_.reshape({2, 2, 7, 6});
  fill_uniform(input_, 7);
  auto layer = make_layer(spp_text(3, false));
  layer->setup({&input_}, {&output_});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
  auto single = make_layer(spp_text(1, false));
  single->setup({&input_}, {&output_});
  testing::GradientChecker().check(*single, {&input_}, {&output_});
}

TEST_F(SPPTest, RejectsWhatCaffeRejects) {
  // 5 rows in 4 bins: kernel 2, padding 2, and pooling needs padding < kernel.
  input_.reshape({1, 1, 5, 8});
  expect_error(
      [&] { make_layer(spp_text(3, true))->setup({&input_}, {&output_}); },
      {"layer 'spp' (SPP)", "level 2", "4x4 bins", "1 1 5 8", "padding 2x0", "pyramid_height"});
  expect_error(
      [&] {
        make_layer("name: 'spp' type: 'SPP' spp_param { pyramid_height: 2 pool: STOCHASTIC }")
            ->setup({&input_}, {&output_});
      },
      {"layer 'spp' (SPP)", "STOCHASTIC"});
  expect_error([&] { make_layer("name: 'spp' type: 'SPP'")->setup({&input_}, {&output_}); },
               {"layer 'spp' (SPP)", "pyramid_height must be at least 1"});
  Blob flat({2, 3, 4});
  expect_error([&] { make_layer(spp_text(2, true))->setup({&flat}, {&output_}); },
               {"layer 'spp' (SPP)", "4 axes", "2 3 4"});
}

}  // namespace
}  // namespace xtrain

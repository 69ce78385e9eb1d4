// MVN: forward against a naive mean/variance normalisation in double for
// every combination of the flags, gradients by finite differences, Caffe's
// 4-d top and eps-on-the-std, and in-place use.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct MVNCase {
  bool normalize_variance;
  bool across_channels;
};

std::string prototxt_of(const MVNCase& c, const std::string& extra = "") {
  return std::string("name: 'mvn' type: 'MVN' mvn_param { normalize_variance: ") +
         (c.normalize_variance ? "true" : "false") +
         " across_channels: " + (c.across_channels ? "true" : "false") + " " + extra + " }";
}

// y = (x - mean) / (std + eps) per group, in double.
std::vector<double> naive_mvn(const Blob& input, const MVNCase& c, double eps) {
  const std::size_t groups =
      static_cast<std::size_t>(input.num()) * (c.across_channels ? 1 : input.channels());
  const std::size_t size = input.count() / groups;
  std::vector<double> out(input.count());
  for (std::size_t g = 0; g < groups; ++g) {
    const float* x = input.cpu_data() + g * size;
    double mean = 0;
    for (std::size_t j = 0; j < size; ++j) mean += x[j];
    mean /= static_cast<double>(size);
    double variance = 0;
    for (std::size_t j = 0; j < size; ++j) variance += (x[j] - mean) * (x[j] - mean);
    variance /= static_cast<double>(size);
    const double divisor = c.normalize_variance ? std::sqrt(variance) + eps : 1.0;
    for (std::size_t j = 0; j < size; ++j) out[g * size + j] = (x[j] - mean) / divisor;
  }
  return out;
}

class MVNLayerTest : public testing::DeviceTestWithParam<MVNCase> {};

TEST_P(MVNLayerTest, ForwardMatchesANaiveNormalisation) {
  Blob bottom({2, 3, 4, 5});
  Blob top;
  testing::fill_uniform(bottom, 61, -2, 3);
  auto layer = make_layer(prototxt_of(GetParam()));
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  const std::vector<double> expected = naive_mvn(bottom, GetParam(), 1e-9);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-5) << i;
  }
}

TEST_P(MVNLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 2, 3});
  Blob top;
  testing::fill_uniform(bottom, 62, -2, 2);
  auto layer = make_layer(prototxt_of(GetParam()));
  layer->setup({&bottom}, {&top});
  testing::GradientCheckOptions options;
  options.threshold = 5e-3f;  // the normalisation bends more than an activation
  testing::GradientChecker(options).check(*layer, {&bottom}, {&top});
}

TEST_P(MVNLayerTest, InPlaceGivesTheSameResults) {
  Blob input({2, 3, 4});
  testing::fill_uniform(input, 63);
  Blob top_diff({2, 3, 4});
  testing::fill_uniform(top_diff, 64);

  testing::expect_in_place_matches_separate(prototxt_of(GetParam()), input, top_diff);
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    MVNLayerTest,
    ::testing::Values(MVNCase{true, false}, MVNCase{true, true}, MVNCase{false, false},
                      MVNCase{false, true}),
    [](const ::testing::TestParamInfo<MVNCase>& param_info) {
      return std::string(param_info.param.normalize_variance ? "Variance" : "MeanOnly") +
             (param_info.param.across_channels ? "AcrossChannels" : "PerChannel");
    });

XTRAIN_DEVICE_TEST(MVNLayerTest2, EpsIsAddedToTheStandardDeviation) {
  // One group {0, 2}: mean 1, std 1; with eps 1 the divisor is 2 (not sqrt(2)).
  Blob bottom({1, 1, 2});
  set_data(bottom, {0, 2});
  Blob top;
  auto layer = make_layer(prototxt_of({true, false}, "eps: 1"));
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{-0.5f, 0.5f}));
}

TEST(MVNLayerTest2, TopIsFourDimensionalAsInCaffe) {
  Blob bottom({3, 4});
  testing::fill_uniform(bottom, 65);
  Blob top;
  auto layer = make_layer(prototxt_of({true, true}));
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{3, 4, 1, 1}));
}

TEST(MVNLayerTest2, MoreThanFourAxesIsAnError) {
  Blob bottom({1, 2, 1, 2, 1});
  Blob top;
  auto layer = make_layer("name: 'mvn' type: 'MVN'");
  testing::expect_setup_error(*layer, {&bottom}, {&top},
                              {"layer 'mvn' (MVN)", "1 2 1 2 1 (4)", "at most 4"});
}

}  // namespace
}  // namespace xtrain

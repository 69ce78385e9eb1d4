// Permute and Normalize, SSD's layers between a feature map and its
// prediction heads: values by hand, gradients against finite differences
// (Normalize's scale included), and bad settings.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::diff_of;
using testing::make_layer;
using testing::set_data;
using testing::set_diff;

XTRAIN_DEVICE_TEST(PermuteLayerTest, ChannelsLastByHandAndTheGradientMovesBack) {
  // N x C x H x W = 1 x 2 x 1 x 3 -> N x H x W x C = 1 x 1 x 3 x 2.
  Blob bottom({1, 2, 1, 3});
  Blob top;
  set_data(bottom, {1, 2, 3, 10, 20, 30});
  auto layer = make_layer(
      "name: 'p' type: 'Permute' permute_param { order: 0 order: 2 order: 3 "
      "order: 1 }");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 1, 3, 2}));
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 10, 2, 20, 3, 30}));
  set_diff(top, {1, 2, 3, 4, 5, 6});
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{1, 3, 5, 2, 4, 6}));
}

XTRAIN_DEVICE_TEST(PermuteLayerTest, UnnamedAxesFollowInOrderAndGradientChecks) {
  Blob bottom({2, 3, 4, 2});
  Blob top;
  testing::fill_uniform(bottom, 3);
  auto layer = make_layer("name: 'p' type: 'Permute' permute_param { order: 2 }");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{4, 2, 3, 2}));
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(PermuteLayerTest, BadOrdersAreErrors) {
  Blob bottom({2, 3});
  Blob top;
  auto twice = make_layer("name: 'p' type: 'Permute' permute_param { order: 1 order: 1 }");
  testing::expect_setup_error(*twice, {&bottom}, {&top}, {"'p'", "twice"});
  auto missing = make_layer("name: 'p' type: 'Permute' permute_param { order: 2 }");
  testing::expect_setup_error(*missing, {&bottom}, {&top}, {"order 2", "2 axes"});
}

XTRAIN_DEVICE_TEST(NormalizeLayerTest, AcrossChannelsAtEachPositionWithChannelScales) {
  // Two channels at two positions: (3, 4) has norm 5, (0, 2) norm 2; scales
  // 10 and 20 per channel.
  Blob bottom({1, 2, 1, 2});
  Blob top;
  set_data(bottom, {3, 0, 4, 2});
  auto layer = make_layer(
      "name: 'n' type: 'Normalize' norm_param { across_spatial: false channel_shared: false "
      "scale_filler { type: 'constant' value: 10 } }");
  layer->setup({&bottom}, {&top});
  layer->blobs()[0]->mutable_cpu_data()[1] = 20;
  layer->forward({&bottom}, {&top});
  testing::expect_near_all(data_of(top), {10 * 0.6f, 0, 20 * 0.8f, 20 * 1.0f}, 1e-5f);
}

XTRAIN_DEVICE_TEST(NormalizeLayerTest, AcrossSpatialWithASharedScaleByHand) {
  // One item of norm sqrt(1 + 4 + 4 + 16) = 5, the default scale 1.
  Blob bottom({1, 1, 2, 2});
  Blob top;
  set_data(bottom, {1, 2, -2, 4});
  auto layer = make_layer("name: 'n' type: 'Normalize'");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(layer->blobs()[0]->count(), 1u);
  layer->forward({&bottom}, {&top});
  testing::expect_near_all(data_of(top), {0.2f, 0.4f, -0.4f, 0.8f}, 1e-6f);
  // dE/ds with dy = 1: sum of x / n = 1.
  set_diff(top, {1, 1, 1, 1});
  std::fill(layer->blobs()[0]->mutable_cpu_diff(), layer->blobs()[0]->mutable_cpu_diff() + 1, 0.0f);
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_NEAR(diff_of(*layer->blobs()[0])[0], 1.0f, 1e-6f);
  // dE/dx_i = (1 - x_i * 5 / 25) / 5: the norm's share taken out.
  testing::expect_near_all(diff_of(bottom), {0.16f, 0.12f, 0.28f, 0.04f}, 1e-6f);
}

XTRAIN_DEVICE_TEST(NormalizeLayerTest, GradientsOfEveryModeIncludingTheScale) {
  for (const char* mode :
       {"across_spatial: false channel_shared: false", "across_spatial: true channel_shared: false",
        "across_spatial: false channel_shared: true",
        "across_spatial: true channel_shared: true"}) {
    SCOPED_TRACE(mode);
    Blob bottom({2, 3, 2, 2});
    Blob top;
    testing::fill_uniform(bottom, 5);
    auto layer = make_layer(std::string("name: 'n' type: 'Normalize' norm_param { ") + mode +
                            " scale_filler { type: 'uniform' min: 1 max: 3 } }");
    layer->setup({&bottom}, {&top});
    testing::GradientCheckOptions options;
    options.step = 1e-3f;
    testing::GradientChecker(options).check(*layer, {&bottom}, {&top});
  }
}

XTRAIN_DEVICE_TEST(NormalizeLayerTest, InPlaceIsAnError) {
  Blob blob({1, 2, 2, 2});
  auto layer = make_layer("name: 'n' type: 'Normalize'");
  testing::expect_setup_error(*layer, {&blob}, {&blob}, {"'n'", "in place"});
}

}  // namespace
}  // namespace xtrain

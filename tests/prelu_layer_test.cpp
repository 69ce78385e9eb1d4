// PReLU: per-channel and shared slopes, the default 0.25 filler, gradients
// of the bottom and the slopes, in-place use, and shape errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

TEST(PReLULayerTest, DefaultSlopesAreAQuarterPerChannel) {
  Blob bottom({2, 3, 2});
  Blob top;
  auto layer = make_layer("name: 'prelu' type: 'PReLU'");
  layer->setup({&bottom}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{3}));
  EXPECT_EQ(data_of(*layer->blobs()[0]), (std::vector<float>{0.25f, 0.25f, 0.25f}));
}

TEST(PReLULayerTest, SharedSlopeIsAScalar) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'prelu' type: 'PReLU' prelu_param { channel_shared: true }");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(layer->blobs()[0]->num_axes(), 0);
  EXPECT_EQ(layer->blobs()[0]->count(), 1u);
}

XTRAIN_DEVICE_TEST(PReLULayerTest, ForwardAndBackwardByHand) {
  // Shape (1, 2, 2): channel 0 has slope 0.5, channel 1 slope -2.
  Blob bottom({1, 2, 2});
  Blob top;
  auto layer = make_layer("name: 'prelu' type: 'PReLU'");
  layer->setup({&bottom}, {&top});
  set_data(*layer->blobs()[0], {0.5f, -2.0f});
  set_data(bottom, {-2, 3, -1, 4});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{-1, 3, 2, 4}));

  set_diff(top, {1, 2, 3, 4});
  set_diff(*layer->blobs()[0], {10, 10});  // gradients accumulate into the diff
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{0.5f, 2, -6, 4}));
  // slope c: sum of dy * x over negative x
  EXPECT_EQ(diff_of(*layer->blobs()[0]), (std::vector<float>{10 + 1 * -2, 10 + 3 * -1}));
}

XTRAIN_DEVICE_TEST(PReLULayerTest, SharedSlopeForwardAndBackwardByHand) {
  Blob bottom({2, 2});
  Blob top;
  auto layer = make_layer(
      "name: 'prelu' type: 'PReLU' prelu_param { channel_shared: true "
      "filler { type: 'constant' value: 0.1 } }");
  layer->setup({&bottom}, {&top});
  EXPECT_FLOAT_EQ(layer->blobs()[0]->cpu_data()[0], 0.1f);
  set_data(bottom, {-10, 1, 2, -20});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{-1, 1, 2, -2}));
  set_diff(top, {1, 1, 1, 2});
  set_diff(*layer->blobs()[0], {0});
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{0.1f, 1, 1, 0.2f}));
  EXPECT_FLOAT_EQ(layer->blobs()[0]->cpu_diff()[0], -10 + 2 * -20);
}

class PReLUGradientTest : public testing::DeviceTestWithParam<bool> {};

TEST_P(PReLUGradientTest, BottomAndSlopesMatchFiniteDifferences) {
  const bool shared = GetParam();
  Blob bottom({2, 3, 2, 2});
  Blob top;
  fill_away_from(bottom, 31, -2, 2, {0.0f}, 0.05f);
  auto layer =
      make_layer(std::string("name: 'prelu' type: 'PReLU' prelu_param { channel_shared: ") +
                 (shared ? "true" : "false") + " filler { type: 'uniform' min: -0.5 max: 0.5 } }");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_INSTANTIATE_ON_DEVICES(PReLUGradientTest, ::testing::Values(false, true),
                              [](const ::testing::TestParamInfo<bool>& param_info) {
                                return std::string(param_info.param ? "Shared" : "PerChannel");
                              });

XTRAIN_DEVICE_TEST(PReLULayerTest, InPlaceKeepsTheInputForBackward) {
  Blob input({2, 3, 4});
  fill_away_from(input, 32, -2, 2, {0.0f}, 0.05f);
  Blob top_diff({2, 3, 4});
  testing::fill_uniform(top_diff, 33);
  const std::string prototxt =
      "name: 'prelu' type: 'PReLU' prelu_param { filler { type: 'uniform' min: -1 max: 1 } }";

  testing::expect_in_place_matches_separate(prototxt, input, top_diff);
}

TEST(PReLULayerTest, NeedsAChannelAxis) {
  Blob bottom({5});
  Blob top;
  auto layer = make_layer("name: 'prelu' type: 'PReLU'");
  expect_setup_error(*layer, {&bottom}, {&top},
                     {"layer 'prelu' (PReLU)", "at least 2 axes", "5 (5)"});
}

TEST(PReLULayerTest, StoredSlopesMustFitTheChannels) {
  LayerParameter param;
  read_proto_from_text_string("name: 'prelu' type: 'PReLU'", &param);
  Blob stored({4});
  stored.to_proto(param.add_blobs());
  auto layer = testing::create_layer(param);
  Blob bottom({2, 3, 2});
  Blob top;
  expect_setup_error(*layer, {&bottom}, {&top}, {"layer 'prelu' (PReLU)", "slope", "(4)", "(3)"});
}

XTRAIN_DEVICE_TEST(PReLULayerTest, ChannelCountCannotChangeAfterSetup) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'prelu' type: 'PReLU'");
  layer->setup({&bottom}, {&top});
  bottom.reshape({2, 4});
  expect_error([&] { layer->forward({&bottom}, {&top}); },
               {"layer 'prelu' (PReLU)", "4 channels", "set up for 3"});
}

}  // namespace
}  // namespace xtrain

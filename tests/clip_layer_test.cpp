// Clip: values by hand (the bounds, where Caffe still passes the gradient),
// the in-place quirk, gradients against finite differences, and missing
// bounds.
#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* kClip = "name: 'clip' type: 'Clip' clip_param { min: -1 max: 1 }";

XTRAIN_DEVICE_TEST(ClipLayerTest, ClampsAndPassesTheGradientInsideAndOnTheBounds) {
  Blob bottom({7});
  Blob top;
  set_data(bottom, {-2.0f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 2.0f});
  auto layer = make_layer(kClip);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{-1, -1, -0.5f, 0, 0.5f, 1, 1}));
  set_diff(top, {1, 2, 3, 4, 5, 6, 7});
  layer->backward({&top}, {true}, {&bottom});
  // x = -1 and x = 1 lie on the bounds: Caffe's >= and <= let them through.
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{0, 2, 3, 4, 5, 6, 0}));
}

XTRAIN_DEVICE_TEST(ClipLayerTest, InPlacePassesEveryGradientAsCaffeDoes) {
  Blob blob({3});
  set_data(blob, {-3.0f, 0.25f, 3.0f});
  auto layer = make_layer(kClip);
  layer->setup({&blob}, {&blob});
  layer->forward({&blob}, {&blob});
  EXPECT_EQ(data_of(blob), (std::vector<float>{-1, 0.25f, 1}));
  set_diff(blob, {1, 2, 3});
  layer->backward({&blob}, {true}, {&blob});
  EXPECT_EQ(diff_of(blob), (std::vector<float>{1, 2, 3}));  // y sits on the bounds
}

XTRAIN_DEVICE_TEST(ClipLayerTest, GradientMatchesFiniteDifferencesAwayFromTheBounds) {
  Blob bottom({2, 3, 4});
  Blob top;
  testing::fill_away_from(bottom, 31, -2.0f, 2.0f, {-0.5f, 0.75f}, 0.05f);
  auto layer = make_layer("name: 'clip' type: 'Clip' clip_param { min: -0.5 max: 0.75 }");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(ClipLayerTest, MissingBoundsAreAnErrorNamingTheLayer) {
  Blob bottom({2});
  Blob top;
  auto layer = make_layer("name: 'clip' type: 'Clip'");
  testing::expect_setup_error(*layer, {&bottom}, {&top}, {"'clip'", "clip_param", "min"});
}

// Caffe clamps to max then to min: every value became the min.
XTRAIN_DEVICE_TEST(ClipLayerTest, AMinAboveTheMaxIsAnErrorNamingTheLayer) {
  Blob bottom({2});
  Blob top;
  auto layer = make_layer("name: 'clip' type: 'Clip' clip_param { min: 3 max: -3 }");
  testing::expect_setup_error(*layer, {&bottom}, {&top},
                              {"layer 'clip' (Clip): clip_param.min 3 is above its max -3"});
}

}  // namespace
}  // namespace xtrain

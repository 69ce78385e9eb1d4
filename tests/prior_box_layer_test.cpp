// PriorBox: the priors of a 2 x 2 feature map on a 100 x 100 image worked
// out by hand, the variances, clipping, explicit image size and step, and
// bad settings.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "device_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;

std::vector<float> priors_of(const std::string& settings, std::vector<int> feature = {1, 4, 2, 2},
                             std::vector<int> image = {1, 3, 100, 100}) {
  Blob map(feature);
  Blob picture(image);
  Blob top;
  auto layer = make_layer("name: 'p' type: 'PriorBox' prior_box_param { " + settings + " }");
  layer->setup({&map, &picture}, {&top});
  layer->forward({&map, &picture}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 2, static_cast<int>(top.count() / 2)}));
  return data_of(top);
}

XTRAIN_DEVICE_TEST(PriorBoxLayerTest, TwoByTwoMapByHand) {
  // Step 50: cell centres at 25 and 75. Per cell: the 30 x 30 square, the
  // sqrt(30 * 60) = 42.43 square, then aspect ratio 2 (42.43 wide, 21.21
  // high) and its flip 0.5.
  const std::vector<float> out = priors_of(
      "min_size: 30 max_size: 60 aspect_ratio: 2 variance: 0.1 variance: 0.1 "
      "variance: 0.2 variance: 0.2");
  ASSERT_EQ(out.size(), 2u * 2 * 2 * 4 * 4);
  const float big = 0.212132f;    // 21.2132 / 100: half of 42.43
  const float small = 0.106066f;  // half of 21.21
  const std::vector<float> cell00 = {
      0.10f,         0.10f,         0.40f,         0.40f,          // 30 x 30
      0.25f - big,   0.25f - big,   0.25f + big,   0.25f + big,    // sqrt(30 * 60)
      0.25f - big,   0.25f - small, 0.25f + big,   0.25f + small,  // ratio 2
      0.25f - small, 0.25f - big,   0.25f + small, 0.25f + big};   // ratio 1/2
  testing::expect_near_all(std::vector<float>(out.begin(), out.begin() + 16), cell00, 1e-5f);
  // The cells run row by row: (0, 1) is centred at x = 75, (1, 0) at y = 75.
  testing::expect_near_all(std::vector<float>(out.begin() + 16, out.begin() + 20),
                           {0.60f, 0.10f, 0.90f, 0.40f}, 1e-6f);
  testing::expect_near_all(std::vector<float>(out.begin() + 32, out.begin() + 36),
                           {0.10f, 0.60f, 0.40f, 0.90f}, 1e-6f);
  // Channel 1: the four variances for every prior.
  for (int p = 0; p < 16; ++p) {
    testing::expect_near_all(std::vector<float>(out.begin() + 64 + 4 * p, out.begin() + 68 + 4 * p),
                             {0.1f, 0.1f, 0.2f, 0.2f}, 0.0f);
  }
}

XTRAIN_DEVICE_TEST(PriorBoxLayerTest, ClipImageSizeStepAndOneVariance) {
  // A 60-pixel prior at centre 25 reaches -5: clipped to 0. img_size and step
  // replace the bottoms' sizes: centre (0.5 * 40) = 20 of 200.
  std::vector<float> out = priors_of("min_size: 60 clip: true");
  testing::expect_near_all(std::vector<float>(out.begin(), out.begin() + 4),
                           {0.0f, 0.0f, 0.55f, 0.55f}, 1e-6f);
  EXPECT_EQ(out[16], 0.1f);  // no variance given
  out = priors_of("min_size: 20 img_size: 200 step: 40 variance: 0.3 flip: false aspect_ratio: 2");
  ASSERT_EQ(out.size(), 2u * 2 * 2 * 2 * 4);
  testing::expect_near_all(std::vector<float>(out.begin(), out.begin() + 4),
                           {0.05f, 0.05f, 0.15f, 0.15f}, 1e-6f);
  EXPECT_EQ(out[32], 0.3f);
}

XTRAIN_DEVICE_TEST(PriorBoxLayerTest, MinSizeIsTruncatedToWholePixelsAsInSsd) {
  const std::vector<float> out = priors_of("min_size: 30.9");
  testing::expect_near_all(std::vector<float>(out.begin(), out.begin() + 4),
                           {0.10f, 0.10f, 0.40f, 0.40f}, 1e-6f);
}

XTRAIN_DEVICE_TEST(PriorBoxLayerTest, BadSettingsAreErrorsNamingTheField) {
  Blob map({1, 1, 2, 2});
  Blob picture({1, 3, 8, 8});
  Blob top;
  for (const auto& [settings, parts] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"", {"'p'", "min_size"}},
           {"min_size: 30 max_size: 20", {"max_size 20", "larger"}},
           {"min_size: 30 variance: 0.1 variance: 0.2", {"variance", "four"}},
           {"min_size: 30 img_size: 10 img_h: 5 img_w: 5", {"img_size", "not both"}}}) {
    auto layer = make_layer("name: 'p' type: 'PriorBox' prior_box_param { " + settings + " }");
    testing::expect_setup_error(*layer, {&map, &picture}, {&top}, parts);
  }
}

}  // namespace
}  // namespace xtrain

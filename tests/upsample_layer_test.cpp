// Upsample: the blocks and their summed gradients by hand, a factor of 3 on
// a non-square map, scale 1 copying, gradients against finite differences,
// and a scale below 1.
#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

XTRAIN_DEVICE_TEST(UpsampleLayerTest, EveryValueBecomesABlockAndItsGradientIsTheBlockSum) {
  // Two channels of 2 x 2; each value fills a 2 x 2 block of the 4 x 4 top.
  Blob bottom({1, 2, 2, 2});
  Blob top;
  set_data(bottom, {1, 2, 3, 4, 5, 6, 7, 8});
  auto layer = make_layer("name: 'up' type: 'Upsample' upsample_param { scale: 2 }");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 2, 4, 4}));
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4,
                                              5, 5, 6, 6, 5, 5, 6, 6, 7, 7, 8, 8, 7, 7, 8, 8}));
  // Top diff = the element's index: bottom (0, 0) gathers 0 + 1 + 4 + 5.
  std::vector<float> top_diff(top.count());
  for (std::size_t k = 0; k < top_diff.size(); ++k) top_diff[k] = static_cast<float>(k);
  set_diff(top, top_diff);
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{10, 18, 42, 50, 74, 82, 106, 114}));
}

XTRAIN_DEVICE_TEST(UpsampleLayerTest, FactorThreeOnANonSquareMap) {
  Blob bottom({2, 1, 1, 2});
  Blob top;
  set_data(bottom, {1, 2, 3, 4});
  auto layer = make_layer("name: 'up' type: 'Upsample' upsample_param { scale: 3 }");
  layer->setup({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 1, 3, 6}));
  layer->forward({&bottom}, {&top});
  const std::vector<float> row0 = {1, 1, 1, 2, 2, 2};
  const std::vector<float> row1 = {3, 3, 3, 4, 4, 4};
  std::vector<float> expected;
  for (const auto* row : {&row0, &row0, &row0, &row1, &row1, &row1}) {
    expected.insert(expected.end(), row->begin(), row->end());
  }
  EXPECT_EQ(data_of(top), expected);
  set_diff(top, std::vector<float>(top.count(), 0.5f));
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{4.5f, 4.5f, 4.5f, 4.5f}));
}

XTRAIN_DEVICE_TEST(UpsampleLayerTest, ScaleOneCopies) {
  Blob bottom({2, 3, 2, 2});
  Blob top;
  fill_uniform(bottom, 5);
  auto layer = make_layer("name: 'up' type: 'Upsample'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), bottom.shape());
  EXPECT_EQ(data_of(top), data_of(bottom));
}

XTRAIN_DEVICE_TEST(UpsampleLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 3, 2});
  Blob top;
  fill_uniform(bottom, 41);
  auto layer = make_layer("name: 'up' type: 'Upsample' upsample_param { scale: 2 }");
  layer->setup({&bottom}, {&top});
  GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(UpsampleLayerTest, BadSettingsAndShapesAreErrors) {
  Blob bottom({1, 2, 2, 2});
  Blob top;
  auto layer = make_layer("name: 'up' type: 'Upsample' upsample_param { scale: 0 }");
  expect_setup_error(*layer, {&bottom}, {&top}, {"'up'", "scale: 0", "at least 1"});
  Blob flat({2, 3});
  layer = make_layer("name: 'up' type: 'Upsample' upsample_param { scale: 2 }");
  expect_setup_error(*layer, {&flat}, {&top}, {"'up'", "4-d"});
}

}  // namespace
}  // namespace xtrain

// BatchReindex: items picked by index (repeats and omissions) by hand, the
// gradient of a repeated item summed, finite differences, and the errors
// (indices out of range, a gradient asked for the indices, indices of the
// wrong shape), each naming the layer.
#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* kReindex = "name: 'pick' type: 'BatchReindex' bottom: 'x' bottom: 'idx'";

XTRAIN_DEVICE_TEST(BatchReindexLayerTest, PicksItemsAndSumsTheGradientsOfRepeats) {
  Blob x({3, 2});
  Blob indices({4});
  Blob top;
  set_data(x, {0, 1, 2, 3, 4, 5});
  set_data(indices, {2, 0, 2, 1});
  auto layer = make_layer(kReindex);
  layer->setup({&x, &indices}, {&top});
  layer->forward({&x, &indices}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{4, 2}));
  EXPECT_EQ(data_of(top), (std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3}));

  set_diff(x, std::vector<float>(6, 9.0f));  // overwritten, not added to
  set_diff(top, {1, 2, 3, 4, 5, 6, 7, 8});
  layer->backward({&top}, {true, false}, {&x, &indices});
  EXPECT_EQ(diff_of(x), (std::vector<float>{3, 4, 7, 8, 1 + 5, 2 + 6}));
}

XTRAIN_DEVICE_TEST(BatchReindexLayerTest, AnItemNeverPickedGetsNoGradient) {
  Blob x({3, 1, 2});
  Blob indices({2});
  Blob top;
  testing::fill_uniform(x, 51);
  set_data(indices, {1, 1});
  auto layer = make_layer(kReindex);
  layer->setup({&x, &indices}, {&top});
  layer->forward({&x, &indices}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 1, 2}));
  set_diff(top, {1, 2, 3, 4});
  layer->backward({&top}, {true, false}, {&x, &indices});
  EXPECT_EQ(diff_of(x), (std::vector<float>{0, 0, 4, 6, 0, 0}));
}

XTRAIN_DEVICE_TEST(BatchReindexLayerTest, GradientMatchesFiniteDifferences) {
  Blob x({4, 3, 2});
  Blob indices({6});
  Blob top;
  testing::fill_uniform(x, 52);
  set_data(indices, {3, 0, 3, 1, 3, 0});
  auto layer = make_layer(kReindex);
  layer->setup({&x, &indices}, {&top});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&x, &indices}, {&top});
}

XTRAIN_DEVICE_TEST(BatchReindexLayerTest, IndexErrorsNameTheLayer) {
  Blob x({3, 2});
  Blob indices({2});
  Blob top;
  auto layer = make_layer(kReindex);
  layer->setup({&x, &indices}, {&top});
  set_data(indices, {0, 3});
  expect_error(
      [&] {
        layer->forward({&x, &indices}, {&top});
      },
      {"'pick'", "BatchReindex", "index 1", "'idx'", "is 3", "[0, 3)"});
  set_data(indices, {-1, 0});
  expect_error([&] { layer->forward({&x, &indices}, {&top}); }, {"'pick'", "index 0", "is -1"});

  set_data(indices, {0, 1});
  layer->forward({&x, &indices}, {&top});
  expect_error(
      [&] {
        layer->backward({&top}, {true, true}, {&x, &indices});
      },
      {"'pick'", "'idx'", "no gradient", "propagate_down: false"});
  EXPECT_FALSE(layer->allow_force_backward(1));

  Blob two_axes({2, 1});
  auto wrong_shape = make_layer(kReindex);
  expect_setup_error(*wrong_shape, {&x, &two_axes}, {&top}, {"'pick'", "one axis", "2 1 (2)"});
}

}  // namespace
}  // namespace xtrain

// The layers that move values without computing new ones: Reshape, Tile,
// Crop and Silence. Shapes and values by hand or against naive index
// arithmetic, gradients by finite differences, and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

// --- Reshape -------------------------------------------------------------------

std::vector<int> reshaped(const std::vector<int>& bottom_shape, const std::string& param) {
  Blob bottom(bottom_shape);
  Blob top;
  auto layer = make_layer("name: 'reshape' type: 'Reshape' reshape_param { " + param + " }");
  layer->setup({&bottom}, {&top});
  return top.shape();
}

TEST(ReshapeLayerTest, CopiesZerosAndInfersMinusOne) {
  EXPECT_EQ(reshaped({2, 3, 4, 5}, "shape { dim: 0 dim: -1 }"), (std::vector<int>{2, 60}));
  EXPECT_EQ(reshaped({2, 3, 4, 5}, "shape { dim: 0 dim: 0 dim: 20 }"),
            (std::vector<int>{2, 3, 20}));
  EXPECT_EQ(reshaped({2, 3, 4, 5}, "shape { dim: -1 dim: 5 dim: 0 }"), (std::vector<int>{6, 5, 4}));
  EXPECT_EQ(reshaped({6}, "shape { dim: 2 dim: 3 }"), (std::vector<int>{2, 3}));
}

// An empty batch: the -1 is what one item would give, so the items keep
// their shape (the count, 0, cannot say it).
TEST(ReshapeLayerTest, AnEmptyBatchInfersMinusOneAsOneItemWould) {
  EXPECT_EQ(reshaped({0, 3, 4, 5}, "shape { dim: 0 dim: -1 }"), (std::vector<int>{0, 60}));
  EXPECT_EQ(reshaped({0, 3, 4, 5}, "shape { dim: 0 dim: -1 dim: 2 }"),
            (std::vector<int>{0, 30, 2}));
  EXPECT_EQ(reshaped({0, 6}, "shape { dim: -1 dim: 3 }"), (std::vector<int>{0, 3}));
}

TEST(ReshapeLayerTest, AxisAndNumAxesReplaceAPartOfTheShape) {
  // Split axis 1 of (2, 6, 5) into (2, 3).
  EXPECT_EQ(reshaped({2, 6, 5}, "axis: 1 num_axes: 1 shape { dim: 2 dim: 3 }"),
            (std::vector<int>{2, 2, 3, 5}));
  // Insert a unit axis at the front, and (axis -1) after the last axis.
  EXPECT_EQ(reshaped({2, 6}, "axis: 0 num_axes: 0 shape { dim: 1 }"), (std::vector<int>{1, 2, 6}));
  EXPECT_EQ(reshaped({2, 6}, "axis: -1 num_axes: 0 shape { dim: 1 }"), (std::vector<int>{2, 6, 1}));
  // Flatten the last two axes with an inferred size.
  // Negative axes count from one past the end: -4 of 3 axes is axis 0.
  EXPECT_EQ(reshaped({2, 3, 4}, "axis: -4 num_axes: -1 shape { dim: 0 dim: -1 }"),
            (std::vector<int>{2, 12}));
  EXPECT_EQ(reshaped({2, 3, 4}, "axis: 1 shape { dim: -1 }"), (std::vector<int>{2, 12}));
}

XTRAIN_DEVICE_TEST(ReshapeLayerTest, SharesDataAndDiffWithTheBottom) {
  Blob bottom({2, 3});
  set_data(bottom, {1, 2, 3, 4, 5, 6});
  Blob top;
  auto layer = make_layer("name: 'r' type: 'Reshape' reshape_param { shape { dim: 3 dim: 2 } }");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(data_of(top), data_of(bottom));
  set_diff(top, {6, 5, 4, 3, 2, 1});
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{6, 5, 4, 3, 2, 1}));
}

XTRAIN_DEVICE_TEST(ReshapeLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 2});
  testing::fill_uniform(bottom, 71);
  Blob top;
  auto layer = make_layer("name: 'r' type: 'Reshape' reshape_param { shape { dim: -1 dim: 4 } }");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(ReshapeLayerTest, FollowsTheBottomWhenItChangesShape) {
  Blob bottom({2, 3, 4});
  Blob top;
  auto layer = make_layer("name: 'r' type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 } }");
  layer->setup({&bottom}, {&top});
  bottom.reshape({5, 3, 4});
  testing::fill_uniform(bottom, 72);
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{5, 12}));
  EXPECT_EQ(data_of(top), data_of(bottom));
}

TEST(ReshapeLayerTest, Errors) {
  Blob bottom({2, 3, 4});
  Blob top;
  auto expect_reshape_error = [&](const std::string& param, const std::vector<std::string>& parts) {
    auto layer = make_layer("name: 'reshape' type: 'Reshape' reshape_param { " + param + " }");
    expect_setup_error(*layer, {&bottom}, {&top}, parts);
  };
  expect_reshape_error("shape { dim: -1 dim: -1 }",
                       {"layer 'reshape' (Reshape)", "more than one -1"});
  expect_reshape_error("shape { dim: 5 dim: -1 }",
                       {"layer 'reshape' (Reshape)", "2 3 4 (24)", "not divisible", "(5)"});
  expect_reshape_error("shape { dim: 5 dim: 5 }", {"layer 'reshape' (Reshape)", "(5, 5)", "24"});
  expect_reshape_error("shape { dim: -2 }", {"layer 'reshape' (Reshape)", "-2"});
  expect_reshape_error("axis: 4 shape { dim: 1 }", {"layer 'reshape' (Reshape)", "axis 4"});
  expect_reshape_error("axis: 2 num_axes: 2 shape { dim: 4 }",
                       {"layer 'reshape' (Reshape)", "num_axes 2", "past the last axis"});
  expect_reshape_error("axis: 2 shape { dim: 0 dim: 0 }",
                       {"layer 'reshape' (Reshape)", "no axis 3 to copy"});
  auto in_place = make_layer("name: 'reshape' type: 'Reshape' reshape_param { shape { dim: -1 } }");
  expect_setup_error(*in_place, {&bottom}, {&bottom}, {"in place"});
}

// --- Tile ----------------------------------------------------------------------

XTRAIN_DEVICE_TEST(TileLayerTest, RepeatsAlongTheAxis) {
  Blob bottom({2, 2});
  set_data(bottom, {1, 2, 3, 4});
  Blob top;
  auto along_1 = make_layer("name: 't' type: 'Tile' tile_param { tiles: 3 }");
  along_1->setup({&bottom}, {&top});
  along_1->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 6}));
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));

  Blob top0;
  auto along_0 = make_layer("name: 't' type: 'Tile' tile_param { axis: 0 tiles: 2 }");
  along_0->setup({&bottom}, {&top0});
  along_0->forward({&bottom}, {&top0});
  EXPECT_EQ(top0.shape(), (std::vector<int>{4, 2}));
  EXPECT_EQ(data_of(top0), (std::vector<float>{1, 2, 3, 4, 1, 2, 3, 4}));
}

XTRAIN_DEVICE_TEST(TileLayerTest, BackwardSumsTheCopies) {
  Blob bottom({1, 2});
  Blob top;
  auto layer = make_layer("name: 't' type: 'Tile' tile_param { tiles: 3 }");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  set_diff(top, {1, 2, 10, 20, 100, 200});
  layer->backward({&top}, {true}, {&bottom});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{111, 222}));
}

XTRAIN_DEVICE_TEST(TileLayerTest, GradientMatchesFiniteDifferences) {
  for (const char* param :
       {"tiles: 3", "axis: 2 tiles: 2", "axis: -1 tiles: 2", "axis: 0 tiles: 2"}) {
    Blob bottom({2, 3, 2});
    testing::fill_uniform(bottom, 73);
    Blob top;
    auto layer = make_layer(std::string("name: 't' type: 'Tile' tile_param { ") + param + " }");
    layer->setup({&bottom}, {&top});
    testing::GradientChecker().check(*layer, {&bottom}, {&top});
  }
}

TEST(TileLayerTest, Errors) {
  Blob bottom({2, 3});
  Blob top;
  auto no_tiles = make_layer("name: 'tile' type: 'Tile'");
  expect_setup_error(*no_tiles, {&bottom}, {&top}, {"layer 'tile' (Tile)", "tiles"});
  auto zero = make_layer("name: 'tile' type: 'Tile' tile_param { tiles: 0 }");
  expect_setup_error(*zero, {&bottom}, {&top}, {"layer 'tile' (Tile)", "positive"});
  auto axis = make_layer("name: 'tile' type: 'Tile' tile_param { tiles: 2 axis: 2 }");
  expect_setup_error(*axis, {&bottom}, {&top}, {"layer 'tile' (Tile)", "axis 2", "2 3 (6)"});
}

// --- Crop ----------------------------------------------------------------------

// top[n, c, h, w] = bottom[n + o0, c + o1, h + o2, w + o3] for a 4-d crop.
void expect_naive_crop(const Blob& bottom, const Blob& top, const std::vector<int>& offsets) {
  for (int n = 0; n < top.num(); ++n) {
    for (int c = 0; c < top.channels(); ++c) {
      for (int h = 0; h < top.height(); ++h) {
        for (int w = 0; w < top.width(); ++w) {
          EXPECT_EQ(top.cpu_data()[top.offset(n, c, h, w)],
                    bottom.cpu_data()[bottom.offset(n + offsets[0], c + offsets[1], h + offsets[2],
                                                    w + offsets[3])])
              << n << " " << c << " " << h << " " << w;
        }
      }
    }
  }
}

XTRAIN_DEVICE_TEST(CropLayerTest, CropsTheSpatialAxesByDefault) {
  Blob bottom({2, 3, 5, 6});
  Blob reference({1, 1, 3, 2});
  testing::fill_uniform(bottom, 74);
  Blob top;
  auto layer = make_layer("name: 'crop' type: 'Crop' crop_param { offset: 1 }");
  layer->setup({&bottom, &reference}, {&top});
  layer->forward({&bottom, &reference}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3, 3, 2}));
  expect_naive_crop(bottom, top, {0, 0, 1, 1});
}

XTRAIN_DEVICE_TEST(CropLayerTest, OneOffsetPerAxisFromAxisOne) {
  Blob bottom({2, 4, 5, 6});
  Blob reference({9, 2, 3, 3});
  testing::fill_uniform(bottom, 75);
  Blob top;
  auto layer =
      make_layer("name: 'crop' type: 'Crop' crop_param { axis: 1 offset: 2 offset: 0 offset: 3 }");
  layer->setup({&bottom, &reference}, {&top});
  layer->forward({&bottom, &reference}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 2, 3, 3}));
  expect_naive_crop(bottom, top, {0, 2, 0, 3});
}

XTRAIN_DEVICE_TEST(CropLayerTest, BackwardPutsTheDiffBackAndZeroesTheRest) {
  Blob bottom({1, 1, 2, 3});
  Blob reference({1, 1, 1, 2});
  Blob top;
  auto layer = make_layer("name: 'crop' type: 'Crop' crop_param { offset: 1 }");
  layer->setup({&bottom, &reference}, {&top});
  layer->forward({&bottom, &reference}, {&top});
  set_diff(bottom, std::vector<float>(6, 9.0f));
  set_diff(top, {5, 7});
  layer->backward({&top}, {true, false}, {&bottom, &reference});
  EXPECT_EQ(diff_of(bottom), (std::vector<float>{0, 0, 0, 0, 5, 7}));
  EXPECT_FALSE(layer->allow_force_backward(1));
}

XTRAIN_DEVICE_TEST(CropLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 4, 4});
  Blob reference({2, 2, 2, 3});
  testing::fill_uniform(bottom, 76);
  Blob top;
  auto layer = make_layer("name: 'crop' type: 'Crop' crop_param { axis: 1 offset: 1 }");
  layer->setup({&bottom, &reference}, {&top});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&bottom, &reference}, {&top});
}

TEST(CropLayerTest, Errors) {
  Blob bottom({2, 3, 4, 4});
  Blob top;
  Blob three_axes({2, 3, 4});
  auto layer = make_layer("name: 'crop' type: 'Crop'");
  expect_setup_error(*layer, {&bottom, &three_axes}, {&top},
                     {"layer 'crop' (Crop)", "2 3 4 4 (96)", "2 3 4 (24)", "number of axes"});
  Blob too_big({2, 3, 3, 3});
  auto offset = make_layer("name: 'crop' type: 'Crop' crop_param { offset: 2 }");
  expect_setup_error(*offset, {&bottom, &too_big}, {&top},
                     {"layer 'crop' (Crop)", "axis 2", "size 3", "offset 2"});
  auto offsets =
      make_layer("name: 'crop' type: 'Crop' crop_param { offset: 0 offset: 0 offset: 0 }");
  Blob small({2, 3, 2, 2});
  expect_setup_error(*offsets, {&bottom, &small}, {&top},
                     {"layer 'crop' (Crop)", "3 offsets", "crops 2 axes"});
}

// --- Silence ---------------------------------------------------------------------

XTRAIN_DEVICE_TEST(SilenceLayerTest, TakesAnyBottomsProducesNothingAndZeroesDiffs) {
  Blob a({2, 3});
  Blob b({4});
  set_diff(a, std::vector<float>(6, 5.0f));
  set_diff(b, std::vector<float>(4, 5.0f));
  auto layer = make_layer("name: 'silence' type: 'Silence'");
  layer->setup({&a, &b}, {});
  EXPECT_EQ(layer->forward({&a, &b}, {}), 0.0f);
  layer->backward({}, {true, false}, {&a, &b});
  EXPECT_EQ(diff_of(a), std::vector<float>(6, 0.0f));
  EXPECT_EQ(diff_of(b), std::vector<float>(4, 5.0f));
}

XTRAIN_DEVICE_TEST(SilenceLayerTest, GradientIsZero) {
  Blob a({2, 3});
  testing::fill_uniform(a, 77);
  set_diff(a, std::vector<float>(6, 5.0f));
  auto layer = make_layer("name: 'silence' type: 'Silence'");
  layer->setup({&a}, {});
  testing::GradientChecker().check(*layer, {&a}, {});
}

TEST(SilenceLayerTest, NeedsABottomAndNoTop) {
  Blob a({1});
  Blob top;
  auto layer = make_layer("name: 'silence' type: 'Silence'");
  expect_setup_error(*layer, {}, {}, {"layer 'silence' (Silence)", "at least 1 bottom"});
  expect_setup_error(*layer, {&a}, {&top}, {"layer 'silence' (Silence)", "0 top"});
}

}  // namespace
}  // namespace xtrain

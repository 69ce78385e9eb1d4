// Flatten, Split and Input: the blob plumbing layers. Flatten and Split are
// views (shared data), so the tests check both the values and the sharing,
// and run the gradient checker over them.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "gradient_checker.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::expect_error;

std::unique_ptr<Layer> make_layer(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  return testing::create_layer(param);
}

void fill_uniform(Blob& blob, std::uint64_t seed) {
  RandomStream random(seed);
  random.uniform(blob.count(), -1.0f, 1.0f, blob.mutable_cpu_data());
}

// ---------------------------------------------------------------- Flatten

struct FlattenCase {
  std::string param;
  std::vector<int> expected_shape;
};

class FlattenShapeTest : public testing::DeviceTestWithParam<FlattenCase> {};

TEST_P(FlattenShapeTest, CollapsesTheAxisRangeAndSharesMemory) {
  Blob bottom({2, 3, 4, 5});
  fill_uniform(bottom, 51);
  Blob top;
  auto layer = make_layer("name: 'flat' type: 'Flatten' " + GetParam().param);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), GetParam().expected_shape);
  ASSERT_EQ(top.count(), bottom.count());
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(top.cpu_diff(), bottom.cpu_diff());
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    FlattenShapeTest,
    ::testing::Values(FlattenCase{"", {2, 60}}, FlattenCase{"flatten_param { axis: 0 }", {120}},
                      FlattenCase{"flatten_param { axis: 1 end_axis: 2 }", {2, 12, 5}},
                      FlattenCase{"flatten_param { axis: 2 }", {2, 3, 20}},
                      FlattenCase{"flatten_param { axis: -2 end_axis: -2 }", {2, 3, 4, 5}},
                      FlattenCase{"flatten_param { axis: 0 end_axis: 1 }", {6, 4, 5}}));

XTRAIN_DEVICE_TEST(FlattenLayerTest, FollowsTheBottomWhenItGrows) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'flat' type: 'Flatten' flatten_param { axis: 0 }");
  layer->setup({&bottom}, {&top});
  bottom.reshape({20, 30});
  fill_uniform(bottom, 52);
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), std::vector<int>{600});
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
}

XTRAIN_DEVICE_TEST(FlattenLayerTest, Gradient) {
  Blob bottom({2, 3, 2});
  fill_uniform(bottom, 53);
  Blob top;
  auto layer = make_layer("name: 'flat' type: 'Flatten'");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

TEST(FlattenLayerTest, Errors) {
  Blob bottom({2, 3, 4});
  Blob top;
  auto in_place = make_layer("name: 'flat' type: 'Flatten'");
  expect_error([&] { in_place->setup({&bottom}, {&bottom}); }, {"in place"});
  auto backwards = make_layer("name: 'flat' type: 'Flatten' flatten_param { axis: 2 end_axis: 1 }");
  const std::string message = error_of([&] { backwards->setup({&bottom}, {&top}); });
  EXPECT_NE(message.find("layer 'flat' (Flatten)"), std::string::npos) << message;
  EXPECT_NE(message.find("end_axis"), std::string::npos) << message;
}

// ------------------------------------------------------------------ Split

XTRAIN_DEVICE_TEST(SplitLayerTest, TopsShareTheBottomsData) {
  Blob bottom({2, 3, 4});
  fill_uniform(bottom, 54);
  Blob a, b, c;
  auto layer = make_layer("name: 'split' type: 'Split'");
  layer->setup({&bottom}, {&a, &b, &c});
  layer->forward({&bottom}, {&a, &b, &c});
  for (Blob* top : {&a, &b, &c}) {
    EXPECT_EQ(top->shape(), bottom.shape());
    EXPECT_EQ(top->cpu_data(), bottom.cpu_data());
  }
}

XTRAIN_DEVICE_TEST(SplitLayerTest, BackwardSumsTheTopDiffs) {
  Blob bottom({7});
  Blob a, b, c;
  auto layer = make_layer("name: 'split' type: 'Split'");
  layer->setup({&bottom}, {&a, &b, &c});
  layer->forward({&bottom}, {&a, &b, &c});
  for (int i = 0; i < 7; ++i) {
    a.mutable_cpu_diff()[i] = 1.0f * i;
    b.mutable_cpu_diff()[i] = 10.0f;
    c.mutable_cpu_diff()[i] = -0.5f * i;
    bottom.mutable_cpu_diff()[i] = 1000.0f;  // overwritten, not accumulated
  }
  layer->backward({&a, &b, &c}, {true}, {&bottom});
  for (int i = 0; i < 7; ++i) EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], 0.5f * i + 10.0f);

  auto single = make_layer("name: 'split1' type: 'Split'");
  single->setup({&bottom}, {&a});
  single->backward({&a}, {true}, {&bottom});
  for (int i = 0; i < 7; ++i) EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], 1.0f * i);
}

XTRAIN_DEVICE_TEST(SplitLayerTest, Gradient) {
  Blob bottom({2, 3, 2});
  fill_uniform(bottom, 55);
  Blob a, b;
  auto layer = make_layer("name: 'split' type: 'Split'");
  layer->setup({&bottom}, {&a, &b});
  testing::GradientChecker().check(*layer, {&bottom}, {&a, &b});
}

TEST(SplitLayerTest, RefusesInPlace) {
  Blob bottom({3});
  Blob a;
  auto layer = make_layer("name: 'split' type: 'Split'");
  const std::string message = error_of([&] { layer->setup({&bottom}, {&a, &bottom}); });
  EXPECT_NE(message.find("layer 'split' (Split)"), std::string::npos) << message;
  EXPECT_NE(message.find("in place"), std::string::npos) << message;
}

// ------------------------------------------------------------------ Input

TEST(InputLayerTest, OneShapeForEveryTop) {
  Blob a, b;
  auto layer =
      make_layer("name: 'in' type: 'Input' input_param { shape { dim: 4 dim: 3 dim: 2 } }");
  layer->setup({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(b.shape(), (std::vector<int>{4, 3, 2}));
}

XTRAIN_DEVICE_TEST(InputLayerTest, OneShapePerTopAndForwardLeavesDataAlone) {
  Blob data, label;
  auto layer = make_layer(
      "name: 'in' type: 'Input' input_param { shape { dim: 2 dim: 1 dim: 5 dim: 5 } "
      "shape { dim: 2 } }");
  layer->setup({}, {&data, &label});
  EXPECT_EQ(data.shape(), (std::vector<int>{2, 1, 5, 5}));
  EXPECT_EQ(label.shape(), (std::vector<int>{2}));
  label.mutable_cpu_data()[0] = 3;
  label.mutable_cpu_data()[1] = 7;
  // A hand reshape survives forward (which reshapes nothing).
  data.reshape({1, 1, 2, 2});
  EXPECT_EQ(layer->forward({}, {&data, &label}), 0.0f);
  EXPECT_EQ(data.shape(), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(label.cpu_data()[0], 3.0f);
  EXPECT_EQ(label.cpu_data()[1], 7.0f);
  EXPECT_NO_THROW(layer->backward({&data, &label}, {}, {}));
}

TEST(InputLayerTest, ShapeCountMismatchIsAnError) {
  Blob a, b, c;
  auto layer =
      make_layer("name: 'in' type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } }");
  const std::string message = error_of([&] { layer->setup({}, {&a, &b, &c}); });
  EXPECT_NE(message.find("layer 'in' (Input)"), std::string::npos) << message;
  EXPECT_NE(message.find("shape"), std::string::npos) << message;
}

TEST(InputLayerTest, RejectsBottoms) {
  Blob bottom({1});
  Blob top;
  auto layer = make_layer("name: 'in' type: 'Input'");
  EXPECT_THROW(layer->setup({&bottom}, {&top}), Error);
}

}  // namespace
}  // namespace xtrain

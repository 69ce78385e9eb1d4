// DummyData: shapes from `shape` or the legacy fields, one filler for all or
// one per top, Caffe's refill rule (constant tops are filled once at setup,
// the others on every forward), and the parameter errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::expect_error;
using testing::make_layer;

TEST(DummyDataLayerTest, ZerosInTheGivenShapes) {
  Blob a, b;
  auto layer = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } "
      "shape { dim: 4 } }");
  layer->setup({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(b.shape(), (std::vector<int>{4}));
  EXPECT_EQ(data_of(a), std::vector<float>(6, 0.0f));
  EXPECT_EQ(data_of(b), std::vector<float>(4, 0.0f));
}

TEST(DummyDataLayerTest, LegacyShapeFieldsGiveOnceOrPerTop) {
  Blob a, b;
  auto layer = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { num: 5 num: 6 channels: 2 height: 3 "
      "width: 1 width: 4 data_filler { type: 'constant' value: 7 } }");
  layer->setup({}, {&a, &b});
  EXPECT_EQ(a.shape(), (std::vector<int>{5, 2, 3, 1}));
  EXPECT_EQ(b.shape(), (std::vector<int>{6, 2, 3, 4}));
  EXPECT_EQ(data_of(a), std::vector<float>(a.count(), 7.0f));
  EXPECT_EQ(data_of(b), std::vector<float>(b.count(), 7.0f));
}

TEST(DummyDataLayerTest, ConstantTopsAreFilledOnceOthersOnEveryForward) {
  Blob constant, random;
  auto layer = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 10 } "
      "data_filler { type: 'constant' value: 3 } data_filler { type: 'gaussian' std: 1 } }");
  layer->setup({}, {&constant, &random});
  EXPECT_EQ(data_of(constant), std::vector<float>(10, 3.0f));

  // A later layer may change a constant top in place: it stays changed.
  constant.mutable_cpu_data()[0] = -1;
  layer->forward({}, {&constant, &random});
  EXPECT_EQ(constant.cpu_data()[0], -1.0f);
  const std::vector<float> first = data_of(random);
  EXPECT_NE(first, std::vector<float>(10, 0.0f));
  layer->forward({}, {&constant, &random});
  EXPECT_NE(data_of(random), first);
}

TEST(DummyDataLayerTest, OneNonConstantFillerRefillsEveryTop) {
  Blob a, b;
  auto layer = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 3 dim: 4 } "
      "data_filler { type: 'uniform' min: 1 max: 2 } }");
  layer->setup({}, {&a, &b});
  layer->forward({}, {&a, &b});
  const std::vector<float> first_a = data_of(a);
  for (float v : first_a) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LE(v, 2.0f);
  }
  layer->forward({}, {&a, &b});
  EXPECT_NE(data_of(a), first_a);
  EXPECT_NE(data_of(b), data_of(a));
}

TEST(DummyDataLayerTest, ParameterErrors) {
  Blob a, b, c;
  auto fillers = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 1 } "
      "data_filler { } data_filler { } }");
  expect_error(
      [&] {
        fillers->setup({}, {&a, &b, &c});
      },
      {"layer 'dummy' (DummyData)", "2 data_filler", "3 tops"});
  auto shapes = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 1 } shape { dim: 2 } }");
  expect_error(
      [&] {
        shapes->setup({}, {&a, &b, &c});
      },
      {"layer 'dummy' (DummyData)", "2 'shape'", "3 tops"});
  auto both = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 1 } num: 1 channels: 1 "
      "height: 1 width: 1 }");
  expect_error([&] { both->setup({}, {&a}); }, {"layer 'dummy' (DummyData)", "both shape"});
  auto missing = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { num: 1 channels: 1 height: 1 }");
  expect_error([&] { missing->setup({}, {&a}); }, {"layer 'dummy' (DummyData)", "'width'"});
  auto bad_filler = make_layer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 1 } "
      "data_filler { type: 'no_such_filler' } }");
  expect_error([&] { bad_filler->setup({}, {&a}); },
               {"layer 'dummy' (DummyData)", "data_filler", "no_such_filler"});
}

}  // namespace
}  // namespace xtrain

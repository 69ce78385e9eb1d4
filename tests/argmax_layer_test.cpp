// ArgMax: indices and values of the top k, with and without an axis, Caffe's
// output layout and tie order, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "device_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::unique_ptr<Layer> setup_argmax(const std::string& param, Blob& bottom, Blob& top) {
  auto layer = make_layer("name: 'argmax' type: 'ArgMax' argmax_param { " + param + " }");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  return layer;
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, TopOneOverEachItem) {
  Blob bottom({2, 2, 2});
  set_data(bottom, {1, 5, 3, 2, /**/ 0, -1, 7, 6});
  Blob top;
  setup_argmax("", bottom, top);
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 2}));
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, TopKWithValuesWithoutAxis) {
  Blob bottom({2, 4});
  set_data(bottom, {1, 5, 3, 2, /**/ 0, -1, 7, 6});
  Blob top;
  setup_argmax("out_max_val: true top_k: 2", bottom, top);
  // (N, 2, k): the indices, then the values, per item.
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 2, 5, 3, /**/ 2, 3, 7, 6}));
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, KeepsTrailingAxesOfAHighRankBottom) {
  Blob bottom({2, 3, 1, 1, 2});
  testing::fill_uniform(bottom, 51);
  Blob top;
  setup_argmax("top_k: 3", bottom, top);
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 1, 3, 1, 1}));
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, AlongAnAxisMatchesANaiveSearch) {
  Blob bottom({2, 4, 3});
  testing::fill_uniform(bottom, 52);
  for (bool values : {false, true}) {
    Blob top;
    setup_argmax(std::string("axis: 1 top_k: 2 out_max_val: ") + (values ? "true" : "false"),
                 bottom, top);
    ASSERT_EQ(top.shape(), (std::vector<int>{2, 2, 3}));
    for (int n = 0; n < 2; ++n) {
      for (int w = 0; w < 3; ++w) {
        std::vector<std::pair<float, int>> column;
        for (int c = 0; c < 4; ++c) column.push_back({bottom.cpu_data()[(n * 4 + c) * 3 + w], c});
        std::sort(column.rbegin(), column.rend());
        for (int k = 0; k < 2; ++k) {
          const float expected = values ? column[k].first : static_cast<float>(column[k].second);
          EXPECT_EQ(top.cpu_data()[(n * 2 + k) * 3 + w], expected) << n << " " << k << " " << w;
        }
      }
    }
  }
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, NegativeAxisCountsFromTheEnd) {
  Blob bottom({2, 3});
  set_data(bottom, {1, 9, 2, /**/ 8, 0, 3});
  Blob top;
  setup_argmax("axis: -1", bottom, top);
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 1}));
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 0}));
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, TiesRankTheHigherIndexFirstAsCaffe) {
  Blob bottom({1, 4});
  set_data(bottom, {2, 7, 7, 1});
  Blob top;
  setup_argmax("top_k: 3", bottom, top);
  EXPECT_EQ(data_of(top), (std::vector<float>{2, 1, 0}));
}

TEST(ArgMaxLayerTest, TopKLargerThanTheSearchIsAnError) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'argmax' type: 'ArgMax' argmax_param { top_k: 4 }");
  expect_setup_error(*layer, {&bottom}, {&top}, {"layer 'argmax' (ArgMax)", "top_k 4", "2 3 (6)"});
  auto with_axis = make_layer("name: 'argmax' type: 'ArgMax' argmax_param { top_k: 3 axis: 0 }");
  expect_setup_error(*with_axis, {&bottom}, {&top},
                     {"layer 'argmax' (ArgMax)", "top_k 3", "axis 0"});
}

XTRAIN_DEVICE_TEST(ArgMaxLayerTest, HasNoGradient) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = setup_argmax("", bottom, top);
  layer->backward({&top}, {false}, {&bottom});
  expect_error([&] { layer->backward({&top}, {true}, {&bottom}); },
               {"layer 'argmax' (ArgMax)", "no gradient", "propagate_down"});
}

}  // namespace
}  // namespace xtrain

// Filter: the items whose selector is non-zero, by hand for one and two
// filtered bottoms; the tops' sizes (all items at setup, as in Caffe, then the
// selected count, which may be 0); gradients by hand and against finite
// differences; and the errors.
#include <gtest/gtest.h>

#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* kFilter = "name: 'keep' type: 'Filter' bottom: 'x' bottom: 'y' bottom: 'selector'";

XTRAIN_DEVICE_TEST(FilterLayerTest, KeepsTheSelectedItemsOfEveryBottom) {
  Blob x({4, 2});
  Blob y({4, 1, 1});
  Blob selector({4, 1});
  Blob top_x;
  Blob top_y;
  set_data(x, {0, 1, 2, 3, 4, 5, 6, 7});
  set_data(y, {10, 11, 12, 13});
  set_data(selector, {0, 1, 0, -0.5f});  // any non-zero value selects
  auto layer = make_layer(kFilter);
  layer->setup({&x, &y, &selector}, {&top_x, &top_y});
  EXPECT_EQ(top_x.shape(), (std::vector<int>{4, 2}));  // all items until the first forward
  layer->forward({&x, &y, &selector}, {&top_x, &top_y});
  EXPECT_EQ(top_x.shape(), (std::vector<int>{2, 2}));
  EXPECT_EQ(top_y.shape(), (std::vector<int>{2, 1, 1}));
  EXPECT_EQ(data_of(top_x), (std::vector<float>{2, 3, 6, 7}));
  EXPECT_EQ(data_of(top_y), (std::vector<float>{11, 13}));

  set_diff(x, std::vector<float>(8, 9.0f));
  set_diff(y, std::vector<float>(4, 9.0f));
  set_diff(top_x, {1, 2, 3, 4});
  set_diff(top_y, {5, 6});
  layer->backward({&top_x, &top_y}, {true, true, false}, {&x, &y, &selector});
  EXPECT_EQ(diff_of(x), (std::vector<float>{0, 0, 1, 2, 0, 0, 3, 4}));
  EXPECT_EQ(diff_of(y), (std::vector<float>{0, 5, 0, 6}));
}

XTRAIN_DEVICE_TEST(FilterLayerTest, NothingSelectedGivesEmptyTops) {
  Blob x({3, 2});
  Blob selector({3});
  Blob top;
  testing::fill_uniform(x, 61);
  auto layer = make_layer("name: 'keep' type: 'Filter'");
  layer->setup({&x, &selector}, {&top});
  set_data(selector, {0, 0, 0});
  layer->forward({&x, &selector}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{0, 2}));
  layer->backward({&top}, {true, false}, {&x, &selector});
  EXPECT_EQ(diff_of(x), std::vector<float>(6, 0.0f));
}

XTRAIN_DEVICE_TEST(FilterLayerTest, GradientMatchesFiniteDifferences) {
  Blob x({5, 3});
  Blob y({5, 2, 2});
  Blob selector({5});
  Blob top_x;
  Blob top_y;
  testing::fill_uniform(x, 62);
  testing::fill_uniform(y, 63);
  set_data(selector, {1, 0, 1, 1, 0});
  auto layer = make_layer(kFilter);
  layer->setup({&x, &y, &selector}, {&top_x, &top_y});
  layer->forward({&x, &y, &selector}, {&top_x, &top_y});  // the selected sizes
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 1};
  testing::GradientChecker(options).check(*layer, {&x, &y, &selector}, {&top_x, &top_y});
}

XTRAIN_DEVICE_TEST(FilterLayerTest, ErrorsNameTheLayer) {
  Blob x({3, 2});
  Blob top;
  Blob other;
  Blob wide_selector({3, 2});
  auto wide = make_layer(kFilter);
  expect_setup_error(*wide, {&x, &wide_selector}, {&top},
                     {"'keep'", "selector", "3 2 (6)", "(N, 1, ...)"});

  Blob short_selector({2});
  auto mismatched = make_layer(kFilter);
  expect_setup_error(*mismatched, {&x, &short_selector}, {&top},
                     {"'keep'", "bottom 0", "3 2 (6)", "2 items"});

  Blob selector({3});
  auto tops = make_layer(kFilter);
  expect_setup_error(*tops, {&x, &selector}, {&top, &other}, {"'keep'", "one top per bottom"});

  auto layer = make_layer(kFilter);
  set_data(selector, {1, 0, 1});
  layer->setup({&x, &selector}, {&top});
  layer->forward({&x, &selector}, {&top});
  expect_error(
      [&] {
        layer->backward({&top}, {true, true}, {&x, &selector});
      },
      {"'keep'", "selector", "no gradient", "propagate_down: false"});
  EXPECT_TRUE(layer->allow_force_backward(0));
}

}  // namespace
}  // namespace xtrain

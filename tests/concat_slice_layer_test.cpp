// Concat and Slice: shapes and values on several axes, the legacy
// concat_dim / slice_dim, single-blob views, gradients, round trips, and
// shape errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

// The value of a 4-d blob at (n, c, h, w).
float at(const Blob& blob, int n, int c, int h, int w) {
  return blob.cpu_data()[blob.offset(n, c, h, w)];
}

class ConcatSliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_.reshape({2, 3, 2, 3});
    b_.reshape({2, 5, 2, 3});
    c_.reshape({2, 3, 2, 3});
    fill_uniform(a_, 1);
    fill_uniform(b_, 2);
    fill_uniform(c_, 3);
  }
  Blob a_, b_, c_;
  Blob output_;
};

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, ConcatChannelsByDefault) {
  auto layer = make_layer("name: 'cat' type: 'Concat'");
  layer->setup({&a_, &b_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{2, 8, 2, 3}));
  layer->forward({&a_, &b_}, {&output_});
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 8; ++c) {
      for (int h = 0; h < 2; ++h) {
        for (int w = 0; w < 3; ++w) {
          const float expected = c < 3 ? at(a_, n, c, h, w) : at(b_, n, c - 3, h, w);
          ASSERT_EQ(at(output_, n, c, h, w), expected) << n << " " << c << " " << h << " " << w;
        }
      }
    }
  }
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, ConcatNumViaLegacyConcatDimAndNegativeAxis) {
  auto layer = make_layer("name: 'cat' type: 'Concat' concat_param { concat_dim: 0 }");
  layer->setup({&a_, &c_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{4, 3, 2, 3}));
  layer->forward({&a_, &c_}, {&output_});
  std::vector<float> expected = data_of(a_);
  const std::vector<float> second = data_of(c_);
  expected.insert(expected.end(), second.begin(), second.end());
  expect_near_all(data_of(output_), expected, 0);

  auto last = make_layer("name: 'cat' type: 'Concat' concat_param { axis: -1 }");
  last->setup({&a_, &c_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{2, 3, 2, 6}));
  last->forward({&a_, &c_}, {&output_});
  EXPECT_EQ(at(output_, 1, 2, 1, 4), at(c_, 1, 2, 1, 1));
  EXPECT_EQ(at(output_, 1, 2, 1, 2), at(a_, 1, 2, 1, 2));
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, SingleBottomConcatIsAView) {
  auto layer = make_layer("name: 'cat' type: 'Concat'");
  layer->setup({&a_}, {&output_});
  layer->forward({&a_}, {&output_});
  EXPECT_EQ(output_.cpu_data(), a_.cpu_data());
  EXPECT_EQ(output_.cpu_diff(), a_.cpu_diff());
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, GradientConcat) {
  auto layer = make_layer("name: 'cat' type: 'Concat'");
  layer->setup({&a_, &b_, &c_}, {&output_});
  testing::GradientChecker().check(*layer, {&a_, &b_, &c_}, {&output_});
  auto height = make_layer("name: 'cat' type: 'Concat' concat_param { axis: 2 }");
  height->setup({&a_, &c_}, {&output_});
  testing::GradientChecker().check(*height, {&a_, &c_}, {&output_});
}

TEST_F(ConcatSliceTest, ConcatRejectsMismatchedShapes) {
  Blob other({2, 3, 3, 3});
  expect_error(
      [&] {
        make_layer("name: 'cat' type: 'Concat'")->setup({&a_, &other}, {&output_});
      },
      {"layer 'cat' (Concat)", "except on axis 1", "2 3 2 3 (36)", "2 3 3 3 (54)"});
  Blob fewer_axes({2, 3, 6});
  expect_error(
      [&] {
        make_layer("name: 'cat' type: 'Concat'")->setup({&a_, &fewer_axes}, {&output_});
      },
      {"layer 'cat' (Concat)", "2 3 6 (36)"});
  expect_error(
      [&] {
        make_layer("name: 'cat' type: 'Concat' concat_param { axis: 1 concat_dim: 1 }")
            ->setup({&a_, &c_}, {&output_});
      },
      {"layer 'cat' (Concat)", "not both"});
  expect_error(
      [&] {
        make_layer("name: 'cat' type: 'Concat' concat_param { concat_dim: 4 }")
            ->setup({&a_, &c_}, {&output_});
      },
      {"layer 'cat' (Concat)", "concat_dim 4", "out of range"});
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, SliceAtPointsAndEqually) {
  Blob t0, t1, t2;
  auto layer =
      make_layer("name: 'sl' type: 'Slice' slice_param { axis: 1 slice_point: 1 slice_point: 4 }");
  layer->setup({&b_}, {&t0, &t1, &t2});
  EXPECT_EQ(t0.shape(), (std::vector<int>{2, 1, 2, 3}));
  EXPECT_EQ(t1.shape(), (std::vector<int>{2, 3, 2, 3}));
  EXPECT_EQ(t2.shape(), (std::vector<int>{2, 1, 2, 3}));
  layer->forward({&b_}, {&t0, &t1, &t2});
  EXPECT_EQ(at(t0, 1, 0, 1, 2), at(b_, 1, 0, 1, 2));
  EXPECT_EQ(at(t1, 1, 2, 0, 1), at(b_, 1, 3, 0, 1));
  EXPECT_EQ(at(t2, 0, 0, 1, 0), at(b_, 0, 4, 1, 0));

  auto equal = make_layer("name: 'sl' type: 'Slice' slice_param { slice_dim: 3 }");
  equal->setup({&a_}, {&t0, &t1, &t2});
  EXPECT_EQ(t2.shape(), (std::vector<int>{2, 3, 2, 1}));
  equal->forward({&a_}, {&t0, &t1, &t2});
  EXPECT_EQ(at(t1, 1, 1, 1, 0), at(a_, 1, 1, 1, 1));
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, SliceThenConcatRestoresTheBlob) {
  Blob t0, t1;
  auto slice = make_layer("name: 'sl' type: 'Slice' slice_param { axis: 0 slice_point: 1 }");
  slice->setup({&b_}, {&t0, &t1});
  slice->forward({&b_}, {&t0, &t1});
  auto concat = make_layer("name: 'cat' type: 'Concat' concat_param { axis: 0 }");
  concat->setup({&t0, &t1}, {&output_});
  concat->forward({&t0, &t1}, {&output_});
  expect_near_all(data_of(output_), data_of(b_), 0);
}

XTRAIN_DEVICE_TEST_F(ConcatSliceTest, GradientSlice) {
  Blob t0, t1, t2;
  auto layer =
      make_layer("name: 'sl' type: 'Slice' slice_param { axis: 1 slice_point: 2 slice_point: 3 }");
  layer->setup({&b_}, {&t0, &t1, &t2});
  testing::GradientChecker().check(*layer, {&b_}, {&t0, &t1, &t2});
  auto width = make_layer("name: 'sl' type: 'Slice' slice_param { axis: -1 }");
  width->setup({&a_}, {&t0, &t1, &t2});
  testing::GradientChecker().check(*width, {&a_}, {&t0, &t1, &t2});
}

TEST_F(ConcatSliceTest, SingleTopSliceIsAView) {
  Blob t0;
  auto layer = make_layer("name: 'sl' type: 'Slice'");
  layer->setup({&a_}, {&t0});
  EXPECT_EQ(t0.shape(), a_.shape());
  EXPECT_EQ(t0.cpu_data(), a_.cpu_data());
}

TEST_F(ConcatSliceTest, SliceRejectsBadPoints) {
  Blob t0, t1, t2;
  expect_error(
      [&] {
        make_layer("name: 'sl' type: 'Slice' slice_param { slice_point: 1 }")
            ->setup({&a_}, {&t0, &t1, &t2});
      },
      {"layer 'sl' (Slice)", "1 slice_point values for 3 tops"});
  expect_error(
      [&] {
        make_layer("name: 'sl' type: 'Slice' slice_param { slice_point: 2 slice_point: 2 }")
            ->setup({&a_}, {&t0, &t1, &t2});
      },
      {"layer 'sl' (Slice)", "slice_point 2", "2 3 2 3"});
  expect_error(
      [&] {
        make_layer("name: 'sl' type: 'Slice' slice_param { slice_point: 3 }")
            ->setup({&a_}, {&t0, &t1});
      },
      {"layer 'sl' (Slice)", "slice_point 3", "2 3 2 3"});
  expect_error(
      [&] {
        make_layer("name: 'sl' type: 'Slice'")->setup({&a_}, {&t0, &t1});
      },
      {"layer 'sl' (Slice)", "2 tops", "axis 1", "2 3 2 3"});
  expect_error(
      [&] {
        make_layer("name: 'sl' type: 'Slice' slice_param { axis: 1 slice_dim: 1 }")
            ->setup({&a_}, {&t0, &t1, &t2});
      },
      {"layer 'sl' (Slice)", "not both"});
}

}  // namespace
}  // namespace xtrain

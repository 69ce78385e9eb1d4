// Reduction: every operation against a naive reference over several axes and
// coefficients, gradients by finite differences, the top shape, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct ReductionCase {
  std::string operation;  // SUM, ASUM, SUMSQ, MEAN
  int axis;
  float coeff;
};

std::string prototxt_of(const ReductionCase& c) {
  return "name: 'reduce' type: 'Reduction' reduction_param { operation: " + c.operation +
         " axis: " + std::to_string(c.axis) + " coeff: " + std::to_string(c.coeff) + " }";
}

double reduce_row(const std::string& operation, const float* x, std::size_t n) {
  double sum = 0;
  for (std::size_t j = 0; j < n; ++j) {
    if (operation == "ASUM") {
      sum += std::fabs(x[j]);
    } else if (operation == "SUMSQ") {
      sum += static_cast<double>(x[j]) * x[j];
    } else {
      sum += x[j];
    }
  }
  return operation == "MEAN" ? sum / static_cast<double>(n) : sum;
}

class ReductionLayerTest : public testing::DeviceTestWithParam<ReductionCase> {};

TEST_P(ReductionLayerTest, ForwardMatchesANaiveReduction) {
  const ReductionCase& c = GetParam();
  Blob bottom({2, 3, 4, 5});
  Blob top;
  testing::fill_uniform(bottom, 41, -2, 2);
  auto layer = make_layer(prototxt_of(c));
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  const int axis = c.axis < 0 ? c.axis + 4 : c.axis;
  EXPECT_EQ(top.shape(), std::vector<int>(bottom.shape().begin(), bottom.shape().begin() + axis));
  const std::size_t rows = bottom.count(0, axis);
  const std::size_t row_size = bottom.count(axis);
  ASSERT_EQ(top.count(), rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const double expected =
        c.coeff * reduce_row(c.operation, bottom.cpu_data() + r * row_size, row_size);
    EXPECT_NEAR(top.cpu_data()[r], expected, 1e-4 * std::max(1.0, std::fabs(expected))) << r;
  }
}

TEST_P(ReductionLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 2, 3});
  Blob top;
  fill_away_from(bottom, 42, -2, 2, {0.0f}, 0.05f);  // |x| bends at 0
  auto layer = make_layer(prototxt_of(GetParam()));
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    ReductionLayerTest,
    ::testing::Values(ReductionCase{"SUM", 0, 1}, ReductionCase{"SUM", 1, -2},
                      ReductionCase{"ASUM", 2, 1}, ReductionCase{"ASUM", 0, 0.5f},
                      ReductionCase{"SUMSQ", 1, 1}, ReductionCase{"SUMSQ", -1, 3},
                      ReductionCase{"MEAN", 0, 1}, ReductionCase{"MEAN", 3, 2}),
    [](const ::testing::TestParamInfo<ReductionCase>& param_info) {
      return param_info.param.operation + "Axis" +
             std::to_string(param_info.param.axis < 0 ? 10 : param_info.param.axis) + "Case" +
             std::to_string(param_info.index);
    });

XTRAIN_DEVICE_TEST(ReductionLayerTest2, HandComputedValues) {
  Blob bottom({2, 3});
  set_data(bottom, {1, -2, 3, -4, 5, -6});
  struct Expectation {
    const char* operation;
    std::vector<float> values;
  };
  for (const Expectation& e :
       {Expectation{"SUM", {2, -5}}, Expectation{"ASUM", {6, 15}}, Expectation{"SUMSQ", {14, 77}},
        Expectation{"MEAN", {2.0f / 3, -5.0f / 3}}}) {
    Blob top;
    auto layer =
        make_layer(std::string("name: 'r' type: 'Reduction' reduction_param { operation: ") +
                   e.operation + " axis: 1 }");
    layer->setup({&bottom}, {&top});
    layer->forward({&bottom}, {&top});
    ASSERT_EQ(top.shape(), (std::vector<int>{2})) << e.operation;
    EXPECT_FLOAT_EQ(top.cpu_data()[0], e.values[0]) << e.operation;
    EXPECT_FLOAT_EQ(top.cpu_data()[1], e.values[1]) << e.operation;
  }
}

XTRAIN_DEVICE_TEST(ReductionLayerTest2, DefaultReducesEverythingToAScalar) {
  Blob bottom({2, 2});
  set_data(bottom, {1, 2, 3, 4});
  Blob top;
  auto layer = make_layer("name: 'r' type: 'Reduction'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.num_axes(), 0);
  EXPECT_EQ(data_of(top), (std::vector<float>{10}));
}

TEST(ReductionLayerTest2, AxisOutOfRangeIsAnError) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'r' type: 'Reduction' reduction_param { axis: 2 }");
  expect_setup_error(*layer, {&bottom}, {&top}, {"layer 'r' (Reduction)", "axis 2", "2 3 (6)"});
}

}  // namespace
}  // namespace xtrain

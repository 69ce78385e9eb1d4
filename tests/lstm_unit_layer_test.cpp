// LSTMUnit: one cell step by hand (a continuing stream and one whose cont = 0
// drops the previous cell), its gradients by hand and against finite
// differences, and the shape errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::diff_of;
using testing::make_layer;
using testing::set_data;
using testing::set_diff;

const char* kUnit = "name: 'unit' type: 'LSTMUnit'";

// Two streams, H = 1. Stream 0 continues with every gate input 0: i = f = o
// = 1/2, g = 0. Stream 1 starts anew (cont 0) with i = 3/4 (x_i = ln 3),
// o = 1/2, g = 1/2 (x_g = atanh 1/2); its x_f = 5 must not matter.
struct OneStep {
  Blob c_prev{{1, 2, 1}};
  Blob gates{{1, 2, 4}};
  Blob cont{{1, 2}};
  Blob c;
  Blob h;
  OneStep() {
    set_data(c_prev, {2.0f, 2.0f});
    set_data(gates, {0, 0, 0, 0, std::log(3.0f), 5.0f, 0, std::atanh(0.5f)});
    set_data(cont, {1, 0});
  }
  BlobVec bottom() { return {&c_prev, &gates, &cont}; }
  BlobVec top() { return {&c, &h}; }
};

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, ComputesOneStepByHand) {
  OneStep step;
  auto layer = make_layer(kUnit);
  layer->setup(step.bottom(), step.top());
  layer->forward(step.bottom(), step.top());
  // c = f c_prev + i g: 1/2 * 2 + 1/2 * 0 = 1, and 0 * 2 + 3/4 * 1/2 = 3/8.
  testing::expect_near_all(data_of(step.c), {1.0f, 0.375f}, 1e-6f);
  // h = o tanh(c).
  testing::expect_near_all(data_of(step.h), {0.5f * std::tanh(1.0f), 0.5f * std::tanh(0.375f)},
                           1e-6f);
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, BackwardByHand) {
  OneStep step;
  auto layer = make_layer(kUnit);
  layer->setup(step.bottom(), step.top());
  layer->forward(step.bottom(), step.top());
  // Stream 0 gets dh = 1, stream 1 dc = 1.
  set_diff(step.c, {0, 1});
  set_diff(step.h, {1, 0});
  layer->backward(step.top(), {true, true, false}, step.bottom());
  // Stream 0: dc~ = dh o (1 - tanh(1)^2) = t; dc_prev = t f, dx_i = t g i (1 - i)
  // = 0, dx_f = t c_prev s (1 - s), dx_o = dh tanh(1) o (1 - o), dx_g = t i.
  const float t = 0.5f * (1.0f - std::tanh(1.0f) * std::tanh(1.0f));
  // Stream 1: dc~ = 1, f = 0: dc_prev = 0 and dx_f = 0; dx_i = g i (1 - i),
  // dx_g = i (1 - g^2).
  testing::expect_near_all(diff_of(step.c_prev), {0.5f * t, 0.0f}, 1e-6f);
  testing::expect_near_all(diff_of(step.gates),
                           {0.0f, t * 2.0f * 0.25f, std::tanh(1.0f) * 0.25f, 0.5f * t,  //
                            0.5f * 0.75f * 0.25f, 0.0f, 0.0f, 0.75f * 0.75f},
                           1e-6f);
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, GradientMatchesFiniteDifferences) {
  Blob c_prev({1, 3, 4});
  Blob gates({1, 3, 16});
  Blob cont({1, 3});
  Blob c;
  Blob h;
  testing::fill_uniform(c_prev, 3, -1.0f, 1.0f);
  testing::fill_uniform(gates, 4, -2.0f, 2.0f);
  set_data(cont, {1, 0, 1});
  auto layer = make_layer(kUnit);
  layer->setup({&c_prev, &gates, &cont}, {&c, &h});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 1};
  testing::GradientChecker(options).check(*layer, {&c_prev, &gates, &cont}, {&c, &h});
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, OnlyThePreviousCellAskedLeavesTheGateDiffAlone) {
  OneStep step;
  auto layer = make_layer(kUnit);
  layer->setup(step.bottom(), step.top());
  layer->forward(step.bottom(), step.top());
  set_diff(step.gates, std::vector<float>(8, 7.0f));
  set_diff(step.c, {1, 1});
  set_diff(step.h, {1, 1});
  layer->backward(step.top(), {true, false, false}, step.bottom());
  EXPECT_EQ(diff_of(step.gates), std::vector<float>(8, 7.0f));
  EXPECT_NE(diff_of(step.c_prev)[0], 0.0f);
}

// Setting the unit up on a c_prev, gate input and cont of these shapes is an
// error whose message holds `parts`.
void expect_unit_setup_error(const std::vector<int>& c_prev_shape,
                             const std::vector<int>& gates_shape,
                             const std::vector<int>& cont_shape,
                             const std::vector<std::string>& parts) {
  Blob c_prev(c_prev_shape);
  Blob gates(gates_shape);
  Blob cont(cont_shape);
  Blob c;
  Blob h;
  auto layer = make_layer(kUnit);
  testing::expect_setup_error(*layer, {&c_prev, &gates, &cont}, {&c, &h}, parts);
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, GateInputOfTheWrongWidthIsAnError) {
  expect_unit_setup_error({1, 2, 3}, {1, 2, 9}, {1, 2}, {"'unit'", "1 x 2 x 12", "1 2 9 (18)"});
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, MoreThanOneTimeStepIsAnError) {
  expect_unit_setup_error({2, 2, 3}, {2, 2, 12}, {2, 2}, {"'unit'", "c_prev", "one time step"});
}

XTRAIN_DEVICE_TEST(LstmUnitLayerTest, AGradientForContIsAnError) {
  OneStep step;
  auto layer = make_layer(kUnit);
  layer->setup(step.bottom(), step.top());
  layer->forward(step.bottom(), step.top());
  testing::expect_error(
      [&] {
        layer->backward(step.top(), {true, true, true}, step.bottom());
      },
      {"'unit'", "cont", "propagate_down: false"});
}

}  // namespace
}  // namespace xtrain

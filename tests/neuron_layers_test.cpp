// The model zoo's elementwise layers (AbsVal, Power, Exp, Log, BNLL, ELU,
// Threshold): forward against the formulas computed in double, gradients
// against finite differences, in-place use, Caffe's special cases, and the
// errors for bad parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct NeuronCase {
  std::string label;
  std::string prototxt;
  double (*reference)(double);
  float low, high;    // input range where the function is defined and smooth
  bool kink_at_zero;  // keep inputs away from 0
  bool in_place_allowed;
};

double absval(double x) { return std::fabs(x); }
double square_of_half_plus_one(double x) { return std::pow(0.5 * x + 1, 2); }
double cube(double x) { return x * x * x; }
double sqrt_of_two_x_plus_one(double x) { return std::pow(2 * x + 1, 0.5); }
double three_x_minus_one(double x) { return 3 * x - 1; }
double one(double) { return 1; }
double nine(double) { return 9; }
double exp_e(double x) { return std::exp(x); }
double two_to_half_x_plus_one(double x) { return std::pow(2.0, 0.5 * x + 1); }
double three_e_to_minus_x(double x) { return std::exp(-x + std::log(3.0)); }
double natural_log(double x) { return std::log(x); }
double log10_of_two_x_plus_one(double x) { return std::log10(2 * x + 1); }
double bnll(double x) { return std::log1p(std::exp(x)); }
double elu_one(double x) { return x > 0 ? x : std::exp(x) - 1; }
double elu_half(double x) { return x > 0 ? x : 0.5 * (std::exp(x) - 1); }
double elu_minus(double x) { return x > 0 ? x : -0.5 * (std::exp(x) - 1); }

class NeuronLayerTest : public testing::DeviceTestWithParam<NeuronCase> {};

TEST_P(NeuronLayerTest, ForwardMatchesTheFormula) {
  const NeuronCase& c = GetParam();
  Blob bottom({2, 3, 4, 5});
  Blob top;
  fill_away_from(bottom, 21, c.low, c.high, {0.0f}, c.kink_at_zero ? 0.05f : 0.0f);
  auto layer = make_layer(c.prototxt);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  for (std::size_t i = 0; i < bottom.count(); ++i) {
    const double expected = c.reference(bottom.cpu_data()[i]);
    EXPECT_NEAR(top.cpu_data()[i], expected, 2e-6 * std::max(1.0, std::fabs(expected)))
        << "x = " << bottom.cpu_data()[i];
  }
}

TEST_P(NeuronLayerTest, GradientMatchesFiniteDifferences) {
  const NeuronCase& c = GetParam();
  Blob bottom({2, 3, 3, 2});
  Blob top;
  fill_away_from(bottom, 22, c.low, c.high, {0.0f}, c.kink_at_zero ? 0.05f : 0.0f);
  auto layer = make_layer(c.prototxt);
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

TEST_P(NeuronLayerTest, InPlaceGivesTheSameResultsOrIsRefused) {
  const NeuronCase& c = GetParam();
  Blob input({3, 7});
  fill_away_from(input, 23, c.low, c.high, {0.0f}, c.kink_at_zero ? 0.05f : 0.0f);
  Blob top_diff({3, 7});
  testing::fill_uniform(top_diff, 24);

  if (!c.in_place_allowed) {
    Blob shared;
    shared.reshape_like(input);
    auto in_place = make_layer(c.prototxt);
    expect_setup_error(*in_place, {&shared}, {&shared}, {"in place", c.label});
    return;
  }
  testing::expect_in_place_matches_separate(c.prototxt, input, top_diff);
}

TEST_P(NeuronLayerTest, NoPropagateDownLeavesTheBottomDiffAlone) {
  Blob bottom({4});
  Blob top;
  set_data(bottom, {GetParam().low, GetParam().high, 0.7f * GetParam().low + 0.3f * GetParam().high,
                    0.5f * (GetParam().low + GetParam().high)});
  set_diff(bottom, {42, 42, 42, 42});
  auto layer = make_layer(GetParam().prototxt);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  layer->backward({&top}, {false}, {&bottom});
  EXPECT_EQ(diff_of(bottom), std::vector<float>(4, 42.0f));
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    NeuronLayerTest,
    ::testing::Values(
        NeuronCase{"AbsVal", "name: 'abs' type: 'AbsVal'", absval, -3, 3, true, false},
        NeuronCase{"PowerSquare",
                   "name: 'pow' type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }",
                   square_of_half_plus_one, -3, 3, false, true},
        NeuronCase{"PowerCubeNoShift", "name: 'pow' type: 'Power' power_param { power: 3 }", cube,
                   -2, 2, true, true},
        NeuronCase{"PowerSqrt",
                   "name: 'pow' type: 'Power' power_param { power: 0.5 scale: 2 shift: 1 }",
                   sqrt_of_two_x_plus_one, 0.1f, 3, false, true},
        NeuronCase{"PowerLinear", "name: 'pow' type: 'Power' power_param { scale: 3 shift: -1 }",
                   three_x_minus_one, -2, 2, false, true},
        NeuronCase{"PowerZero", "name: 'pow' type: 'Power' power_param { power: 0 scale: 5 }", one,
                   -2, 2, false, true},
        NeuronCase{"PowerNoScale",
                   "name: 'pow' type: 'Power' power_param { power: 2 scale: 0 shift: 3 }", nine, -2,
                   2, false, true},
        NeuronCase{"Exp", "name: 'exp' type: 'Exp'", exp_e, -2, 2, false, true},
        NeuronCase{"ExpBase2", "name: 'exp' type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 1 }",
                   two_to_half_x_plus_one, -2, 2, false, true},
        NeuronCase{"ExpShifted", "name: 'exp' type: 'Exp' exp_param { scale: -1 shift: 1.0986123 }",
                   three_e_to_minus_x, -2, 2, false, true},
        NeuronCase{"Log", "name: 'log' type: 'Log'", natural_log, 0.5f, 3, false, true},
        NeuronCase{"LogBase10", "name: 'log' type: 'Log' log_param { base: 10 scale: 2 shift: 1 }",
                   log10_of_two_x_plus_one, 0.1f, 2, false, true},
        NeuronCase{"BNLL", "name: 'bnll' type: 'BNLL'", bnll, -4, 4, false, true},
        NeuronCase{"ELU", "name: 'elu' type: 'ELU'", elu_one, -3, 3, true, true},
        NeuronCase{"ELUHalf", "name: 'elu' type: 'ELU' elu_param { alpha: 0.5 }", elu_half, -3, 3,
                   true, true},
        NeuronCase{"ELUNegativeAlpha", "name: 'elu' type: 'ELU' elu_param { alpha: -0.5 }",
                   elu_minus, -3, 3, true, true}),
    [](const ::testing::TestParamInfo<NeuronCase>& param_info) { return param_info.param.label; });

// Runs a 1-d layer on `x` with top diff `dy`; returns (y, dx).
std::pair<std::vector<float>, std::vector<float>> run(const std::string& prototxt,
                                                      const std::vector<float>& x,
                                                      const std::vector<float>& dy) {
  Blob bottom({static_cast<int>(x.size())});
  Blob top;
  set_data(bottom, x);
  auto layer = make_layer(prototxt);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  set_diff(top, dy);
  layer->backward({&top}, {true}, {&bottom});
  return {data_of(top), diff_of(bottom)};
}

XTRAIN_DEVICE_TEST(AbsValLayerTest, HandComputedValuesWithZeroGradientAtZero) {
  const auto [y, dx] = run("name: 'a' type: 'AbsVal'", {-2, 0, 3}, {5, 5, 5});
  EXPECT_EQ(y, (std::vector<float>{2, 0, 3}));
  EXPECT_EQ(dx, (std::vector<float>{-5, 0, 5}));
}

XTRAIN_DEVICE_TEST(PowerLayerTest, HandComputedSquare) {
  // y = (0.5 x + 1)^2, dy/dx = 2 * 0.5 * (0.5 x + 1)
  const auto [y, dx] = run("name: 'p' type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }",
                           {-1, 0, 2}, {1, 1, 2});
  EXPECT_EQ(y, (std::vector<float>{0.25f, 1, 4}));
  EXPECT_EQ(dx, (std::vector<float>{0.5f, 1, 4}));
}

XTRAIN_DEVICE_TEST(PowerLayerTest, PowerZeroIsOneWithZeroGradientEvenForInfinities) {
  const float inf = std::numeric_limits<float>::infinity();
  const auto [y, dx] = run("name: 'p' type: 'Power' power_param { power: 0 scale: 2 shift: 1 }",
                           {-inf, 0, 7}, {inf, 1, 1});
  EXPECT_EQ(y, (std::vector<float>{1, 1, 1}));
  // Caffe sets the gradient to 0 without multiplying by the top diff.
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0}));
}

XTRAIN_DEVICE_TEST(PowerLayerTest, ScaleZeroIsShiftToThePower) {
  const auto [y, dx] = run("name: 'p' type: 'Power' power_param { power: 3 scale: 0 shift: 2 }",
                           {-5, 0, 5}, {1, 1, 1});
  EXPECT_EQ(y, (std::vector<float>{8, 8, 8}));
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0}));
}

XTRAIN_DEVICE_TEST(PowerLayerTest, NoShiftGradientComesFromTheOutputAsInCaffe) {
  // p y / x: at x = 0 that is 0/0, NaN, where the true derivative of x^3 is 0.
  const auto [y, dx] = run("name: 'p' type: 'Power' power_param { power: 3 }", {0, 2}, {1, 1});
  EXPECT_EQ(y, (std::vector<float>{0, 8}));
  EXPECT_TRUE(std::isnan(dx[0]));
  EXPECT_FLOAT_EQ(dx[1], 12.0f);
}

XTRAIN_DEVICE_TEST(ExpLayerTest, HandComputedBaseTwo) {
  // y = 2^(3x + 1), dy/dx = 3 ln 2 y
  const auto [y, dx] =
      run("name: 'e' type: 'Exp' exp_param { base: 2 scale: 3 shift: 1 }", {0, 1}, {1, 2});
  EXPECT_FLOAT_EQ(y[0], 2.0f);
  EXPECT_FLOAT_EQ(y[1], 16.0f);
  EXPECT_FLOAT_EQ(dx[0], 3 * std::log(2.0f) * 2);
  EXPECT_FLOAT_EQ(dx[1], 3 * std::log(2.0f) * 16 * 2);
}

XTRAIN_DEVICE_TEST(LogLayerTest, HandComputedBaseTwo) {
  // y = log2(x), dy/dx = 1 / (x ln 2)
  const auto [y, dx] = run("name: 'l' type: 'Log' log_param { base: 2 }", {1, 8}, {1, 3});
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_FLOAT_EQ(y[1], 3.0f);
  EXPECT_FLOAT_EQ(dx[0], 1 / std::log(2.0f));
  EXPECT_FLOAT_EQ(dx[1], 3 / (8 * std::log(2.0f)));
}

TEST(ExpLogLayerTest, BadBasesAreRefused) {
  for (const char* prototxt : {"name: 'bad' type: 'Exp' exp_param { base: 0 }",
                               "name: 'bad' type: 'Exp' exp_param { base: -2 }",
                               "name: 'bad' type: 'Log' log_param { base: -3 }",
                               "name: 'bad' type: 'Log' log_param { base: 1 }"}) {
    Blob bottom({2});
    Blob top;
    auto layer = make_layer(prototxt);
    expect_setup_error(*layer, {&bottom}, {&top}, {"layer 'bad'", "base"});
  }
}

XTRAIN_DEVICE_TEST(BNLLLayerTest, StableForLargeInputs) {
  const auto [y, dx] = run("name: 'b' type: 'BNLL'", {-100, 0, 100}, {1, 1, 1});
  EXPECT_NEAR(y[0], 0.0f, 1e-30f);
  EXPECT_FLOAT_EQ(y[1], std::log(2.0f));
  EXPECT_FLOAT_EQ(y[2], 100.0f);
  EXPECT_NEAR(dx[0], 0.0f, 1e-30f);
  EXPECT_FLOAT_EQ(dx[1], 0.5f);
  EXPECT_FLOAT_EQ(dx[2], 1.0f);
}

XTRAIN_DEVICE_TEST(ELULayerTest, HandComputedValues) {
  // alpha 2: y = 2 (e^x - 1) for x <= 0, dy/dx = y + 2 there
  const auto [y, dx] =
      run("name: 'e' type: 'ELU' elu_param { alpha: 2 }", {-1, 0, 1.5f}, {1, 1, 1});
  EXPECT_FLOAT_EQ(y[0], 2 * (std::exp(-1.0f) - 1));
  EXPECT_FLOAT_EQ(y[1], 0.0f);
  EXPECT_FLOAT_EQ(y[2], 1.5f);
  EXPECT_FLOAT_EQ(dx[0], 2 * std::exp(-1.0f));
  EXPECT_FLOAT_EQ(dx[1], 2.0f);
  EXPECT_FLOAT_EQ(dx[2], 1.0f);
}

XTRAIN_DEVICE_TEST(ThresholdLayerTest, StepsAboveTheThreshold) {
  Blob bottom({5});
  Blob top;
  set_data(bottom, {-1, 0.2f, 0.5f, 0.50001f, 3});
  auto layer = make_layer("name: 't' type: 'Threshold' threshold_param { threshold: 0.5 }");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{0, 0, 0, 1, 1}));
}

XTRAIN_DEVICE_TEST(ThresholdLayerTest, WorksInPlace) {
  Blob blob({3});
  set_data(blob, {-1, 0, 2});
  auto layer = make_layer("name: 't' type: 'Threshold'");
  layer->setup({&blob}, {&blob});
  layer->forward({&blob}, {&blob});
  EXPECT_EQ(data_of(blob), (std::vector<float>{0, 0, 1}));
}

XTRAIN_DEVICE_TEST(ThresholdLayerTest, HasNoGradient) {
  Blob bottom({2, 3});
  Blob top;
  auto layer = make_layer("name: 'thr' type: 'Threshold' bottom: 'scores'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  layer->backward({&top}, {false}, {&bottom});  // nothing asked: fine
  expect_error([&] { layer->backward({&top}, {true}, {&bottom}); },
               {"layer 'thr' (Threshold)", "no gradient", "'scores'", "2 3", "propagate_down"});
}

TEST(NeuronLayerBaseTest, BlobCountsAreChecked) {
  Blob a({2});
  Blob b({2});
  Blob top;
  auto layer = make_layer("name: 'p' type: 'Power'");
  expect_setup_error(*layer, {&a, &b}, {&top}, {"layer 'p' (Power)", "1 bottom"});
}

}  // namespace
}  // namespace xtrain

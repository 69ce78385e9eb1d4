// SigmoidCrossEntropyLoss: the loss against the textbook cross-entropy of
// sigmoid(x) (by hand and on random data), every normalization mode with and
// without ignore_label (Caffe's default here is BATCH_SIZE), gradients against
// finite differences, stability for large |x|, and the user errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace xtrain {
namespace {

using namespace testing;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

XTRAIN_DEVICE_TEST(SigmoidCrossEntropyLossLayer, ByHand) {
  // x = (0, ln 3 | -ln 3, 2), t = (1, 1 | 0, 0.5): p = (1/2, 3/4 | 1/4, s),
  // s = sigmoid(2). Summed cross-entropy:
  //   ln 2 + ln(4/3) + ln(4/3) + (ln(1 + e^-2) + ln(1 + e^2)) / 2,
  // divided by the batch size 2 (the default normalization).
  Blob x({2, 2}), t({2, 2}), loss;
  fill_values(x, {0.0f, std::log(3.0f), -std::log(3.0f), 2.0f});
  fill_values(t, {1, 1, 0, 0.5f});
  auto layer = make_loss_layer("SigmoidCrossEntropyLoss");
  layer->setup({&x, &t}, {&loss});
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  layer->forward({&x, &t}, {&loss});
  const double sum = std::log(2.0) + 2 * std::log(4.0 / 3.0) +
                     (std::log(1 + std::exp(-2.0)) + std::log(1 + std::exp(2.0))) / 2;
  EXPECT_NEAR(loss.cpu_data()[0], sum / 2, 1e-6);
  // dE/dx = (p - t) / 2.
  layer->backward({&loss}, {true, false}, {&x, &t});
  const double expected[] = {-0.25, -0.125, 0.125, (sigmoid(2) - 0.5) / 2};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(x.cpu_diff()[j], expected[j], 1e-6) << j;
}

XTRAIN_DEVICE_TEST(SigmoidCrossEntropyLossLayer, LargeScoresStayFinite) {
  // A naive log(sigmoid(x)) would give log(0) here.
  Blob x({1, 2}), t({1, 2}), loss;
  fill_values(x, {100, -100});
  fill_values(t, {0, 1});
  auto layer = make_loss_layer("SigmoidCrossEntropyLoss");
  layer->setup({&x, &t}, {&loss});
  layer->forward({&x, &t}, {&loss});
  EXPECT_NEAR(loss.cpu_data()[0], 200.0, 1e-3);
  layer->backward({&loss}, {true, false}, {&x, &t});
  EXPECT_NEAR(x.cpu_diff()[0], 1.0, 1e-6);
  EXPECT_NEAR(x.cpu_diff()[1], -1.0, 1e-6);
}

// Scores 3 x 2 x 2 (12 positions), targets in [0, 1] except the ones set to
// the ignore label 2 at positions 1, 6 and 7.
constexpr int kNum = 3;
constexpr int kCount = 12;

struct Fixture {
  Blob x{std::vector<int>{kNum, 2, 2}};
  Blob t{std::vector<int>{kNum, 2, 2}};
  Blob loss;
  Fixture() {
    fill_uniform(x, -3, 3, 11);
    fill_uniform(t, 0, 1, 12);
    t.mutable_cpu_data()[3] = 1;  // hard targets too
    t.mutable_cpu_data()[4] = 0;
    for (int j : {1, 6, 7}) t.mutable_cpu_data()[j] = 2;
  }
  BlobVec bottom() { return {&x, &t}; }
  BlobVec top() { return {&loss}; }
};

// Summed cross-entropy over the targets other than `ignore` (pass -1 for
// none) and how many there were.
double reference_sum(const Blob& x, const Blob& t, int ignore, int* valid) {
  double sum = 0;
  *valid = 0;
  for (int j = 0; j < kCount; ++j) {
    const double target = t.cpu_data()[j];
    if (static_cast<int>(target) == ignore) continue;
    const double p = sigmoid(x.cpu_data()[j]);
    sum -= target * std::log(p) + (1 - target) * std::log(1 - p);
    ++*valid;
  }
  return sum;
}

class SigmoidCrossEntropyNormalizationTest
    : public testing::DeviceTestWithParam<NormalizationCase> {
 protected:
  // The case's layer, set up on f; without an ignore_label, targets 1, 6 and
  // 7 are soft (0.5).
  std::unique_ptr<Layer> make_case_layer(Fixture& f) {
    if (GetParam().ignore < 0) {
      for (int j : {1, 6, 7}) f.t.mutable_cpu_data()[j] = 0.5f;
    }
    auto layer = make_loss_layer("SigmoidCrossEntropyLoss", GetParam().loss_param);
    layer->setup(f.bottom(), f.top());
    return layer;
  }
};

TEST_P(SigmoidCrossEntropyNormalizationTest, LossMatchesTheReference) {
  Fixture f;
  auto layer = make_case_layer(f);
  layer->forward(f.bottom(), f.top());
  int valid = 0;
  const double sum = reference_sum(f.x, f.t, GetParam().ignore, &valid);
  EXPECT_NEAR(f.loss.cpu_data()[0], sum / GetParam().normalizer(valid), 1e-5);
}

TEST_P(SigmoidCrossEntropyNormalizationTest, GradientMatchesFiniteDifferences) {
  Fixture f;
  auto layer = make_case_layer(f);
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, f.bottom(), f.top());
  if (GetParam().ignore >= 0) {
    for (int j : {1, 6, 7}) EXPECT_EQ(f.x.cpu_diff()[j], 0.0f) << j;
  }
}

double batch(int) { return kNum; }
double full(int) { return kCount; }

XTRAIN_INSTANTIATE_ON_DEVICES(
    SigmoidCrossEntropyNormalizationTest,
    ::testing::Values(
        NormalizationCase{"DefaultIsBatchSize", "", -1, batch},
        NormalizationCase{"DefaultIgnoring", "loss_param { ignore_label: 2 }", 2, batch},
        NormalizationCase{"Full", "loss_param { normalization: FULL ignore_label: 2 }", 2, full},
        NormalizationCase{"Valid", "loss_param { normalization: VALID ignore_label: 2 }", 2,
                          valid_count},
        NormalizationCase{"ValidWithoutIgnore", "loss_param { normalization: VALID }", -1,
                          valid_count},
        NormalizationCase{"BatchSize", "loss_param { normalization: BATCH_SIZE }", -1, batch},
        NormalizationCase{"None", "loss_param { normalization: NONE ignore_label: 2 }", 2, one},
        NormalizationCase{"LegacyNormalizeTrue", "loss_param { normalize: true ignore_label: 2 }",
                          2, valid_count},
        NormalizationCase{"LegacyNormalizeFalse", "loss_param { normalize: false }", -1, batch},
        NormalizationCase{"NormalizationWinsOverNormalize",
                          "loss_param { normalize: true normalization: NONE }", -1, one}),
    [](const ::testing::TestParamInfo<NormalizationCase>& param_info) {
      return std::string(param_info.param.name);
    });

XTRAIN_DEVICE_TEST(SigmoidCrossEntropyLossLayer, AllIgnoredGivesZeroLossAndGradient) {
  Fixture f;
  for (std::size_t j = 0; j < f.t.count(); ++j) f.t.mutable_cpu_data()[j] = -1;
  auto layer = make_loss_layer("SigmoidCrossEntropyLoss",
                               "loss_param { ignore_label: -1 normalization: VALID }");
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  EXPECT_EQ(f.loss.cpu_data()[0], 0.0f);
  layer->backward(f.top(), {true, false}, f.bottom());
  EXPECT_EQ(f.x.asum_diff(), 0.0);
}

XTRAIN_DEVICE_TEST(SigmoidCrossEntropyLossLayer, UserErrors) {
  Blob x({2, 3}), t({2, 2}), loss;
  auto layer = make_loss_layer("SigmoidCrossEntropyLoss");
  expect_error(
      [&] {
        layer->setup({&x, &t}, {&loss});
      },
      {"layer 'loss' (SigmoidCrossEntropyLoss): the scores bottom 0 of "
       "shape 2 3 (6) and the targets bottom 1 of shape 2 2 (4) must have "
       "the same count"});

  Fixture f;
  f.t.mutable_cpu_data()[1] = 1.5f;
  auto strict = make_loss_layer("SigmoidCrossEntropyLoss");
  strict->setup(f.bottom(), f.top());
  expect_error([&] { strict->forward(f.bottom(), f.top()); },
               {"layer 'loss' (SigmoidCrossEntropyLoss): target 1.5 at position 1 "
                "is outside [0, 1]"});

  Fixture g;
  auto no_targets = make_loss_layer("SigmoidCrossEntropyLoss", "loss_param { ignore_label: 2 }");
  no_targets->setup(g.bottom(), g.top());
  no_targets->forward(g.bottom(), g.top());
  EXPECT_FALSE(no_targets->allow_force_backward(1));
  expect_error(
      [&] {
        no_targets->backward(g.top(), {true, true}, g.bottom());
      },
      {"cannot backpropagate to its targets bottom 1"});
}

}  // namespace
}  // namespace xtrain

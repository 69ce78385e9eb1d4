// NVIDIA Caffe 0.17's large-batch schedules (include/xtrain/lr_policy.hpp):
// the learning-rate warm-up and min_lr, the momentum and weight-decay
// policies, against values worked out by hand from its formulas, and the
// settings they refuse.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

SolverParameter solver(const std::string& text) {
  SolverParameter param;
  read_proto_from_text_string(text, &param, "lr_policy_large_batch_test");
  return param;
}

// The rates of iterations 0, 1, ..., n - 1, asked once each, in order, as a
// solver does (multistep's position advances between them).
std::vector<float> rates_in_order(const SolverParameter& param, int n, int* step) {
  std::vector<float> rates;
  for (int iter = 0; iter < n; ++iter) rates.push_back(learning_rate(param, iter, step));
  return rates;
}

float rate_at(const SolverParameter& param, int iter) {
  int step = 0;
  return learning_rate(param, iter, &step);
}

TEST(LearningRateWarmUp, RampsQuadraticallyFromRampupLrToBaseLr) {
  // rampup_lr + (base_lr - rampup_lr) * (it / rampup_interval)^2 with
  // 0.01 + 0.09 a^2:
  const SolverParameter param =
      solver("lr_policy: 'fixed' base_lr: 0.1 rampup_interval: 10 rampup_lr: 0.01");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(param, 1), 0.0109f);  // 0.01 + 0.09 * 0.01
  EXPECT_FLOAT_EQ(rate_at(param, 5), 0.0325f);  // 0.01 + 0.09 * 0.25
  EXPECT_FLOAT_EQ(rate_at(param, 9), 0.0829f);  // 0.01 + 0.09 * 0.81
  EXPECT_FLOAT_EQ(rate_at(param, 10), 0.1f);    // the policy from here on
  EXPECT_FLOAT_EQ(rate_at(param, 1000), 0.1f);
}

TEST(LearningRateWarmUp, StartsFromZeroWithoutRampupLr) {
  const SolverParameter param = solver("lr_policy: 'fixed' base_lr: 0.2 rampup_interval: 4");
  EXPECT_EQ(rate_at(param, 0), 0.0f);
  EXPECT_FLOAT_EQ(rate_at(param, 1), 0.0125f);  // 0.2 / 16
  EXPECT_FLOAT_EQ(rate_at(param, 2), 0.05f);    // 0.2 / 4
  EXPECT_FLOAT_EQ(rate_at(param, 3), 0.1125f);  // 0.2 * 9 / 16
  EXPECT_FLOAT_EQ(rate_at(param, 4), 0.2f);
}

TEST(LearningRateWarmUp, TheStepPolicyTakesOverWhereTheWarmUpEnds) {
  // "step" counts its steps from iteration 0 (NVIDIA Caffe): at 6,
  // floor(6 / 4) = 1 step already passed.
  const SolverParameter param =
      solver("lr_policy: 'step' base_lr: 1 gamma: 0.5 stepsize: 4 rampup_interval: 6");
  int step = 0;
  EXPECT_FLOAT_EQ(learning_rate(param, 3, &step), 0.25f);  // (3 / 6)^2
  EXPECT_FLOAT_EQ(learning_rate(param, 5, &step), 25.0f / 36.0f);
  EXPECT_EQ(step, 0) << "the warm-up leaves the schedule's position alone";
  EXPECT_FLOAT_EQ(learning_rate(param, 6, &step), 0.5f);
  EXPECT_EQ(step, 1);
  EXPECT_FLOAT_EQ(learning_rate(param, 8, &step), 0.25f);
  EXPECT_EQ(step, 2);
}

TEST(LearningRateWarmUp, MultistepCatchesUpAStepvalueInsideTheWarmUpAfterIt) {
  // stepvalue 2 falls in the warm-up (iterations 0-3): as in NVIDIA Caffe
  // the position only moves once the policy is consulted, at 4.
  const SolverParameter param = solver(
      "lr_policy: 'multistep' base_lr: 1 gamma: 0.5 stepvalue: 2 stepvalue: 8 "
      "rampup_interval: 4");
  int step = 0;
  const std::vector<float> rates = rates_in_order(param, 10, &step);
  const std::vector<float> expected = {0,    1.0f / 16, 0.25f, 9.0f / 16, 0.5f,
                                       0.5f, 0.5f,      0.5f,  0.25f,     0.25f};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_FLOAT_EQ(rates[i], expected[i]) << "iteration " << i;
  }
  EXPECT_EQ(step, 2);
}

TEST(LearningRateFloor, MinLrIsAFloorUnderEveryPolicy) {
  // step: 1, 0.1, 0.01, 0.001 -> 0.005, 0.0001 -> 0.005
  const SolverParameter step =
      solver("lr_policy: 'step' base_lr: 1 gamma: 0.1 stepsize: 1 min_lr: 0.005");
  EXPECT_FLOAT_EQ(rate_at(step, 0), 1.0f);
  EXPECT_FLOAT_EQ(rate_at(step, 1), 0.1f);
  EXPECT_FLOAT_EQ(rate_at(step, 2), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(step, 3), 0.005f);
  EXPECT_FLOAT_EQ(rate_at(step, 10), 0.005f);
  // exp: 0.5^it, floored at 0.1 from iteration 4 (0.0625) on.
  const SolverParameter exp = solver("lr_policy: 'exp' base_lr: 1 gamma: 0.5 min_lr: 0.1");
  EXPECT_FLOAT_EQ(rate_at(exp, 3), 0.125f);
  EXPECT_FLOAT_EQ(rate_at(exp, 4), 0.1f);
  // The warm-up too: 0.1 * (1/10)^2 = 0.001 < 0.002.
  const SolverParameter warm =
      solver("lr_policy: 'fixed' base_lr: 0.1 rampup_interval: 10 min_lr: 0.002");
  EXPECT_FLOAT_EQ(rate_at(warm, 0), 0.002f);
  EXPECT_FLOAT_EQ(rate_at(warm, 1), 0.002f);
  EXPECT_FLOAT_EQ(rate_at(warm, 2), 0.004f);  // 0.1 * 0.04
}

TEST(LearningRateFloor, PolyDecaysToMinLr) {
  // (base_lr - min_lr) (1 - it / max_iter)^power + min_lr = 0.08 (1 - it/100)^2 + 0.02
  const SolverParameter param =
      solver("lr_policy: 'poly' base_lr: 0.1 min_lr: 0.02 power: 2 max_iter: 100");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.1f);
  EXPECT_FLOAT_EQ(rate_at(param, 50), 0.04f);    // 0.08 * 0.25 + 0.02
  EXPECT_FLOAT_EQ(rate_at(param, 90), 0.0208f);  // 0.08 * 0.01 + 0.02
  EXPECT_FLOAT_EQ(rate_at(param, 100), 0.02f);
}

// Unset, the new fields leave Caffe 1.0's rates as they were, bit for bit:
// each policy's formula in double, rounded once.
TEST(LearningRateFloor, UnsetOrZeroFieldsKeepCaffesRatesBitForBit) {
  const char* const policies[] = {
      "lr_policy: 'step' base_lr: 0.01 gamma: 0.1 stepsize: 7",
      "lr_policy: 'exp' base_lr: 0.01 gamma: 0.999",
      "lr_policy: 'inv' base_lr: 0.01 gamma: 0.0001 power: 0.75",
      "lr_policy: 'poly' base_lr: 0.013 power: 0.9 max_iter: 50",
      "lr_policy: 'sigmoid' base_lr: 0.01 gamma: 0.3 stepsize: 20",
  };
  for (const char* text : policies) {
    const SolverParameter unset = solver(text);
    const SolverParameter zero =
        solver(std::string(text) + " min_lr: 0 rampup_interval: 0 rampup_lr: 0");
    for (int iter = 0; iter <= 50; ++iter) {
      const double base = unset.base_lr();
      const double gamma = unset.gamma();
      const double power = unset.power();
      double caffe = base;
      const std::string& policy = unset.lr_policy();
      if (policy == "step") caffe = base * std::pow(gamma, iter / unset.stepsize());
      if (policy == "exp") caffe = base * std::pow(gamma, iter);
      if (policy == "inv") caffe = base * std::pow(1.0 + gamma * iter, -power);
      if (policy == "poly") caffe = base * std::pow(1.0 - double(iter) / unset.max_iter(), power);
      if (policy == "sigmoid") {
        caffe = base / (1.0 + std::exp(-gamma * (double(iter) - unset.stepsize())));
      }
      EXPECT_EQ(rate_at(unset, iter), static_cast<float>(caffe)) << text << " at " << iter;
      EXPECT_EQ(rate_at(zero, iter), static_cast<float>(caffe)) << text << " at " << iter;
    }
  }
}

TEST(MomentumPolicy, FixedIsMomentum) {
  const SolverParameter param = solver("lr_policy: 'fixed' base_lr: 0.1 momentum: 0.9");
  EXPECT_EQ(scheduled_momentum(param, 0, 0.1f), 0.9f);
  EXPECT_EQ(scheduled_momentum(param, 12345, 0.5f), 0.9f);
}

TEST(MomentumPolicy, PolyMovesFromMomentumToMaxMomentum) {
  // momentum + (max_momentum - momentum) (it / max_iter)^power = 0.9 + 0.09 (it/100)^2
  const SolverParameter param = solver(
      "momentum: 0.9 momentum_policy: 'poly' max_momentum: 0.99 momentum_power: 2 "
      "max_iter: 100");
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 0, 0.1f), 0.9f);
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 10, 0.1f), 0.9009f);  // 0.9 + 0.09 * 0.01
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 50, 0.1f), 0.9225f);  // 0.9 + 0.09 * 0.25
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 100, 0.1f), 0.99f);
  // momentum_power defaults to 1: a straight line, 0.5 -> 0.9 over 4.
  const SolverParameter linear =
      solver("momentum: 0.5 momentum_policy: 'poly' max_momentum: 0.9 max_iter: 4");
  EXPECT_FLOAT_EQ(scheduled_momentum(linear, 1, 0.1f), 0.6f);
  EXPECT_FLOAT_EQ(scheduled_momentum(linear, 3, 0.1f), 0.8f);
}

TEST(MomentumPolicy, OptFollowsTheRateCappedByMaxMomentumWhenSet) {
  // (1 - sqrt(rate) / 2)^2
  const SolverParameter param = solver("momentum_policy: 'opt'");
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 0, 0.04f), 0.81f);    // (1 - 0.1)^2
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 0, 0.01f), 0.9025f);  // (1 - 0.05)^2
  // max_momentum's default (0.99) is no cap: only a max_momentum set is.
  EXPECT_FLOAT_EQ(scheduled_momentum(param, 0, 0.0001f), 0.990025f);  // (1 - 0.005)^2
  const SolverParameter capped = solver("momentum_policy: 'opt' max_momentum: 0.85");
  EXPECT_FLOAT_EQ(scheduled_momentum(capped, 0, 0.04f), 0.81f);
  EXPECT_FLOAT_EQ(scheduled_momentum(capped, 0, 0.01f), 0.85f);
}

TEST(WeightDecayPolicy, FixedIsWeightDecay) {
  const SolverParameter param = solver("weight_decay: 0.0005");
  EXPECT_EQ(scheduled_weight_decay(param, 0), 0.0005f);
  EXPECT_EQ(scheduled_weight_decay(param, 999), 0.0005f);
}

TEST(WeightDecayPolicy, PolyMovesFromWeightDecayToMaxWeightDecay) {
  // 0.0005 + (0.0015 - 0.0005) (it / 100)^power
  const SolverParameter linear = solver(
      "weight_decay: 0.0005 weight_decay_policy: 'poly' max_weight_decay: 0.0015 max_iter: 100");
  EXPECT_FLOAT_EQ(scheduled_weight_decay(linear, 0), 0.0005f);
  EXPECT_FLOAT_EQ(scheduled_weight_decay(linear, 50), 0.001f);
  EXPECT_FLOAT_EQ(scheduled_weight_decay(linear, 100), 0.0015f);
  const SolverParameter squared = solver(
      "weight_decay: 0.0005 weight_decay_policy: 'poly' max_weight_decay: 0.0015 "
      "weight_decay_power: 2 max_iter: 100");
  EXPECT_FLOAT_EQ(scheduled_weight_decay(squared, 50), 0.00075f);  // 0.0005 + 0.001 * 0.25
  // max_weight_decay defaults to 0: a decay that fades out.
  const SolverParameter fading =
      solver("weight_decay: 0.001 weight_decay_policy: 'poly' max_iter: 10");
  EXPECT_FLOAT_EQ(scheduled_weight_decay(fading, 5), 0.0005f);
  EXPECT_EQ(scheduled_weight_decay(fading, 10), 0.0f);
}

// Each solver text (first) is refused by `call` with a message containing
// the second.
template <typename Call>
void expect_refused(Call call, const std::vector<std::pair<const char*, const char*>>& cases) {
  for (const auto& [solver_text, said] : cases) {
    std::string message = "(no error)";
    try {
      call(solver(solver_text));
    } catch (const Error& error) {
      message = error.what();
    }
    EXPECT_NE(message.find(said), std::string::npos)
        << "solver {" << solver_text << "} gave: " << message;
  }
}

TEST(LargeBatchSchedules, BadWarmUpAndFloorSettingsAreRefusedNamingTheField) {
  expect_refused([](const SolverParameter& param) { rate_at(param, 0); },
                 {
                     {"lr_policy: 'fixed' base_lr: 0.1 min_lr: 0.2",
                      "min_lr: 0.2 must lie in [0, base_lr] (base_lr: 0.1)"},
                     {"lr_policy: 'poly' base_lr: 0.1 power: 1 max_iter: 9 min_lr: -0.01",
                      "min_lr: -0.01 must lie in [0, base_lr]"},
                     {"lr_policy: 'fixed' base_lr: 0.1 rampup_interval: 10 rampup_lr: -1",
                      "rampup_lr: -1 is not a finite rate >= 0"},
                     {"lr_policy: 'fixed' base_lr: 0.1 rampup_lr: inf",
                      "rampup_lr: inf is not a finite rate >= 0"},
                     {"lr_policy: 'fixed' base_lr: 0.1 rampup_interval: -5",
                      "rampup_interval: -5 is negative"},
                 });
}

TEST(LargeBatchSchedules, BadMomentumPoliciesAreRefusedNamingTheField) {
  expect_refused(
      [](const SolverParameter& param) { scheduled_momentum(param, 0, 0.1f); },
      {
          {"momentum_policy: 'cosine'",
           "unknown momentum_policy \"cosine\"; use one of: fixed, poly, opt"},
          {"momentum_policy: 'poly' max_momentum: 1 max_iter: 10",
           "max_momentum must lie in [0, 1), but the solver sets max_momentum: 1"},
          {"momentum_policy: 'opt' max_momentum: -0.5", "max_momentum must lie in [0, 1)"},
          {"momentum: 0.9 momentum_policy: 'poly'",
           "momentum_policy \"poly\" moves the momentum from momentum to max_momentum "
           "over max_iter iterations, so it needs max_iter > 0, got 0"},
          {"momentum_policy: 'poly' momentum_power: -1 max_iter: 10",
           "momentum_policy \"poly\" needs momentum_power >= 0, got momentum_power: -1"},
      });
}

TEST(LargeBatchSchedules, BadWeightDecayPoliciesAreRefusedNamingTheField) {
  expect_refused([](const SolverParameter& param) { scheduled_weight_decay(param, 0); },
                 {
                     {"weight_decay_policy: 'step'",
                      "unknown weight_decay_policy \"step\"; use one of: fixed, poly"},
                     {"weight_decay: 0.001 weight_decay_policy: 'poly'",
                      "weight_decay_policy \"poly\" moves the weight decay from weight_decay to "
                      "max_weight_decay over max_iter iterations, so it needs max_iter > 0"},
                     {"weight_decay_policy: 'poly' weight_decay_power: -2 max_iter: 10",
                      "needs weight_decay_power >= 0, got weight_decay_power: -2"},
                     {"weight_decay_policy: 'poly' max_weight_decay: -0.1 max_iter: 10",
                      "max_weight_decay: -0.1 is not a finite number >= 0"},
                 });
}

}  // namespace
}  // namespace xtrain

// Learning-rate policies against values worked out by hand from Caffe's
// formulas (see include/xtrain/lr_policy.hpp).
#include "xtrain/lr_policy.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

SolverParameter solver(const std::string& text) {
  SolverParameter param;
  read_proto_from_text_string(text, &param, "lr_policy_test");
  return param;
}

float rate_at(const SolverParameter& param, int iter) {
  int step = 0;
  return learning_rate(param, iter, &step);
}

std::string error_of(const SolverParameter& param) {
  try {
    rate_at(param, 0);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(LearningRatePolicy, FixedIsBaseLr) {
  const SolverParameter param = solver("lr_policy: 'fixed' base_lr: 0.01");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(param, 100), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(param, 1000000), 0.01f);
}

TEST(LearningRatePolicy, StepDropsEveryStepsizeAndSetsCurrentStep) {
  const SolverParameter param = solver("lr_policy: 'step' base_lr: 0.01 gamma: 0.1 stepsize: 100");
  int step = -1;
  EXPECT_FLOAT_EQ(learning_rate(param, 0, &step), 0.01f);
  EXPECT_EQ(step, 0);
  EXPECT_FLOAT_EQ(learning_rate(param, 99, &step), 0.01f);
  EXPECT_EQ(step, 0);
  EXPECT_FLOAT_EQ(learning_rate(param, 100, &step), 0.001f);
  EXPECT_EQ(step, 1);
  EXPECT_FLOAT_EQ(learning_rate(param, 250, &step), 0.0001f);
  EXPECT_EQ(step, 2);
}

TEST(LearningRatePolicy, ExpIsGammaToTheIter) {
  const SolverParameter param = solver("lr_policy: 'exp' base_lr: 0.01 gamma: 0.99");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(param, 1), 0.0099f);
  EXPECT_FLOAT_EQ(rate_at(param, 2), 0.009801f);
  EXPECT_FLOAT_EQ(rate_at(param, 10), 0.00904382075f);  // 0.99^10 = 0.904382075
}

TEST(LearningRatePolicy, InvMatchesLeNetSchedule) {
  // The schedule of Caffe's lenet_solver.prototxt.
  const SolverParameter param = solver("lr_policy: 'inv' base_lr: 0.01 gamma: 0.0001 power: 0.75");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(param, 10000), 0.00594603558f);  // 2^-0.75
  EXPECT_FLOAT_EQ(rate_at(param, 30000), 0.00353553391f);  // 4^-0.75
}

TEST(LearningRatePolicy, MultistepAdvancesOncePerCallAtEachStepvalue) {
  const SolverParameter param =
      solver("lr_policy: 'multistep' base_lr: 1 gamma: 0.5 stepvalue: 3 stepvalue: 5");
  const int expected_steps[] = {0, 0, 0, 1, 1, 2, 2, 2};
  const float expected_rates[] = {1, 1, 1, 0.5f, 0.5f, 0.25f, 0.25f, 0.25f};
  int step = 0;
  for (int iter = 0; iter < 8; ++iter) {
    EXPECT_FLOAT_EQ(learning_rate(param, iter, &step), expected_rates[iter]) << "iter " << iter;
    EXPECT_EQ(step, expected_steps[iter]) << "iter " << iter;
  }
}

TEST(LearningRatePolicy, MultistepCatchesUpOneStepPerCallAsCaffeDoes) {
  const SolverParameter param =
      solver("lr_policy: 'multistep' base_lr: 1 gamma: 0.5 stepvalue: 3 stepvalue: 5");
  int step = 0;
  // Jumping past both stepvalues still advances by one per call.
  EXPECT_FLOAT_EQ(learning_rate(param, 10, &step), 0.5f);
  EXPECT_EQ(step, 1);
  EXPECT_FLOAT_EQ(learning_rate(param, 11, &step), 0.25f);
  EXPECT_EQ(step, 2);
  // A restored position is honoured.
  step = 2;
  EXPECT_FLOAT_EQ(learning_rate(param, 4, &step), 0.25f);
}

TEST(LearningRatePolicy, PolyReachesZeroAtMaxIter) {
  const SolverParameter param = solver("lr_policy: 'poly' base_lr: 0.1 power: 2 max_iter: 100");
  EXPECT_FLOAT_EQ(rate_at(param, 0), 0.1f);
  EXPECT_FLOAT_EQ(rate_at(param, 50), 0.025f);  // 0.1 * 0.5^2
  EXPECT_FLOAT_EQ(rate_at(param, 90), 0.001f);  // 0.1 * 0.1^2
  EXPECT_FLOAT_EQ(rate_at(param, 100), 0.0f);
}

TEST(LearningRatePolicy, SigmoidIsHalfAtStepsize) {
  const SolverParameter param = solver("lr_policy: 'sigmoid' base_lr: 1 gamma: 0.5 stepsize: 10");
  EXPECT_FLOAT_EQ(rate_at(param, 10), 0.5f);
  EXPECT_FLOAT_EQ(rate_at(param, 12), 0.7310585786f);  // 1 / (1 + e^-1)
  EXPECT_FLOAT_EQ(rate_at(param, 8), 0.2689414214f);   // 1 / (1 + e^1)
}

TEST(LearningRatePolicy, UnknownPolicyListsTheKnownOnes) {
  const std::string message = error_of(solver("lr_policy: 'cosine' base_lr: 0.1"));
  EXPECT_NE(message.find("unknown lr_policy \"cosine\""), std::string::npos) << message;
  EXPECT_NE(message.find("fixed, step, exp, inv, multistep, poly, sigmoid"), std::string::npos)
      << message;
}

// Each solver text (first) is refused with a message containing the second.
void expect_refused(const std::vector<std::pair<const char*, const char*>>& cases) {
  for (const auto& [solver_text, said] : cases) {
    const std::string message = error_of(solver(solver_text));
    EXPECT_NE(message.find(said), std::string::npos)
        << "solver {" << solver_text << "} gave: " << message;
  }
}

TEST(LearningRatePolicy, MissingFieldsAreNamed) {
  expect_refused({
      {"base_lr: 0.1", "lr_policy"},
      {"lr_policy: 'fixed'", "base_lr"},
      {"lr_policy: 'step' base_lr: 0.1 gamma: 0.1", "stepsize"},
      {"lr_policy: 'step' base_lr: 0.1 stepsize: 10", "gamma"},
      {"lr_policy: 'exp' base_lr: 0.1", "gamma"},
      {"lr_policy: 'inv' base_lr: 0.1 gamma: 0.1", "power"},
      {"lr_policy: 'multistep' base_lr: 0.1 stepvalue: 10", "gamma"},
      {"lr_policy: 'poly' base_lr: 0.1 max_iter: 10", "power"},
      {"lr_policy: 'poly' base_lr: 0.1 power: 1", "max_iter"},
      {"lr_policy: 'sigmoid' base_lr: 0.1 gamma: 0.1", "stepsize"},
      {"lr_policy: 'step' base_lr: 0.1 gamma: -0.1 stepsize: 10", "gamma >= 0"},
  });
}

// Caffe runs these without a word; none is a schedule anyone means.
TEST(LearningRatePolicy, ValuesNoScheduleMeansAreRefused) {
  expect_refused({
      {"lr_policy: 'multistep' base_lr: 0.1 gamma: 0.1 stepvalue: 200 stepvalue: 100",
       "stepvalue #2 (100) does not come after stepvalue #1 (200)"},
      {"lr_policy: 'multistep' base_lr: 0.1 gamma: 0.1 stepvalue: 5 stepvalue: 9 stepvalue: 9",
       "stepvalue #3 (9) does not come after stepvalue #2 (9)"},
      {"lr_policy: 'poly' base_lr: 0.1 power: -1 max_iter: 10", "needs power >= 0, got power: -1"},
      {"lr_policy: 'inv' base_lr: 0.1 gamma: 0.1 power: -0.5", "needs power >= 0"},
      {"lr_policy: 'fixed' base_lr: inf", "base_lr: inf is not a finite number"},
      {"lr_policy: 'fixed' base_lr: nan", "is not a finite number"},
  });
}

// gamma > 1 is allowed (a warm-up), until gamma^iter passes what a float
// holds: then the rate is an error naming the iteration, not inf weights.
TEST(LearningRatePolicy, ARatePastWhatAFloatHoldsIsAnErrorNamingTheIteration) {
  const SolverParameter exp = solver("lr_policy: 'exp' base_lr: 0.01 gamma: 1e30");
  EXPECT_FLOAT_EQ(rate_at(exp, 0), 0.01f);
  EXPECT_FLOAT_EQ(rate_at(exp, 1), 1e28f);
  try {
    rate_at(exp, 2);
    ADD_FAILURE() << "a rate of 1e58 was given as a float";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("lr_policy \"exp\" gives a learning rate of 1e+58 at iteration 2"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("lower gamma"), std::string::npos) << message;
  }
  const SolverParameter step = solver("lr_policy: 'step' base_lr: 1 gamma: 1e20 stepsize: 10");
  EXPECT_FLOAT_EQ(rate_at(step, 19), 1e20f);
  EXPECT_THROW(rate_at(step, 20), Error);
}

}  // namespace
}  // namespace xtrain

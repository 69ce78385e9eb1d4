// SGD with momentum: updates worked out by hand for a one-weight net, and a
// double-precision reference implementation for weight decay (L1/L2),
// lr_mult/decay_mult, iter_size and gradient clipping over several steps.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "solver_test_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

using namespace testing;

SolverParameter make_solver(const NetParameter& net, const std::string& extra) {
  return testing::solver_param(net, extra);
}

SolverOptions quiet() { return testing::quiet_solver_options(); }

float weight(Solver& solver, int param, int index = 0) {
  return solver.net().learnable_params()[param]->cpu_data()[index];
}

// Steps `solver` once per value of `expected`: the weight after each step.
void expect_weight_after_each_step(Solver& solver, const std::vector<float>& expected) {
  for (float w : expected) {
    solver.step(1);
    EXPECT_NEAR(weight(solver, 0), w, 1e-6f) << "after iteration " << solver.iter();
  }
}

using testing::scalar_net;

XTRAIN_DEVICE_TEST(SGDSolver, MomentumByHand) {
  // lr 0.1, momentum 0.9, w0 = 1:
  //   it 0: x = 1: g = 1,   v = 0.1,                    w = 0.9
  //   it 1: x = 2: g = 3.6, v = 0.09 + 0.36 = 0.45,     w = 0.45
  //   it 2: x = -1: g = 0.45, v = 0.405 + 0.045 = 0.45, w = 0
  auto solver = create_solver(make_solver(scalar_net(), "momentum: 0.9"), quiet());
  expect_weight_after_each_step(*solver, {0.9f, 0.45f, 0.0f});
  EXPECT_EQ(solver->iter(), 3);
}

XTRAIN_DEVICE_TEST(SGDSolver, L2WeightDecayByHand) {
  // As above plus g += 0.1 w:
  //   it 0: g = 1 + 0.1 = 1.1,          v = 0.11,                 w = 0.89
  //   it 1: g = 3.56 + 0.089 = 3.649,   v = 0.099 + 0.3649,       w = 0.4261
  //   it 2: g = 0.4261 + 0.04261,       v = 0.41751 + 0.046871,   w = -0.038281
  auto solver = create_solver(
      make_solver(scalar_net(), "momentum: 0.9 weight_decay: 0.1 regularization_type: 'L2'"),
      quiet());
  expect_weight_after_each_step(*solver, {0.89f, 0.4261f, -0.038281f});
}

XTRAIN_DEVICE_TEST(SGDSolver, L1WeightDecayByHand) {
  // g += 0.1 sign(w):
  //   it 0: g = 1 + 0.1 = 1.1,     v = 0.11,            w = 0.89
  //   it 1: g = 3.56 + 0.1 = 3.66, v = 0.099 + 0.366,   w = 0.425
  //   it 2: g = 0.425 + 0.1,       v = 0.4185 + 0.0525, w = -0.046
  auto solver = create_solver(
      make_solver(scalar_net(), "momentum: 0.9 weight_decay: 0.1 regularization_type: 'L1'"),
      quiet());
  expect_weight_after_each_step(*solver, {0.89f, 0.425f, -0.046f});
}

// Caffe's SGD on the linear regression net, in double precision.
struct ReferenceSgd {
  int outputs = 2;
  int inputs = 2;
  std::vector<double> w = {0.5, -0.3, 0.2, 0.4};  // outputs x inputs
  std::vector<double> b = {0.1, -0.2};
  std::vector<double> w_history = std::vector<double>(4, 0.0);
  std::vector<double> b_history = std::vector<double>(2, 0.0);
  int cursor = 0;
  int clip_events = 0;

  // One iteration: iter_size passes over `batch` rows each.
  void step(int batch, int iter_size, double rate, double momentum, double weight_decay, bool l1,
            double w_lr_mult, double w_decay_mult, double b_lr_mult, double b_decay_mult,
            double clip) {
    std::vector<double> gw(w.size(), 0.0), gb(b.size(), 0.0);
    for (int pass = 0; pass < iter_size; ++pass) {
      for (int n = 0; n < batch; ++n, ++cursor) {
        const float* x = kRows[cursor % kRowCount];
        for (int o = 0; o < outputs; ++o) {
          double y = b[o];
          for (int i = 0; i < inputs; ++i) y += w[o * inputs + i] * x[i];
          const double dy = y / batch;  // loss = sum(y^2) / (2 batch)
          for (int i = 0; i < inputs; ++i) gw[o * inputs + i] += dy * x[i];
          gb[o] += dy;
        }
      }
    }
    if (clip >= 0) {  // on the accumulated sum, before dividing by iter_size
      double sumsq = 0;
      for (double g : gw) sumsq += g * g;
      for (double g : gb) sumsq += g * g;
      const double norm = std::sqrt(sumsq);
      if (norm > clip) {
        ++clip_events;
        for (double& g : gw) g *= clip / norm;
        for (double& g : gb) g *= clip / norm;
      }
    }
    auto update = [&](std::vector<double>& value, std::vector<double>& grad,
                      std::vector<double>& history, double lr_mult, double decay_mult) {
      for (std::size_t j = 0; j < value.size(); ++j) {
        double g = grad[j] / iter_size;
        const double sign = (value[j] > 0) - (value[j] < 0);
        g += weight_decay * decay_mult * (l1 ? sign : value[j]);
        history[j] = momentum * history[j] + rate * lr_mult * g;
        value[j] -= history[j];
      }
    };
    update(w, gw, w_history, w_lr_mult, w_decay_mult);
    update(b, gb, b_history, b_lr_mult, b_decay_mult);
  }
};

const char* const kLinearInit =
    "blobs { shape { dim: 2 dim: 2 } data: 0.5 data: -0.3 data: 0.2 data: 0.4 }\n"
    "blobs { shape { dim: 2 } data: 0.1 data: -0.2 }\n";

void expect_matches_reference(Solver& solver, const ReferenceSgd& reference) {
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(weight(solver, 0, j), reference.w[j], 1e-5)
        << "weight " << j << " at iteration " << solver.iter();
  }
  for (int j = 0; j < 2; ++j) {
    EXPECT_NEAR(weight(solver, 1, j), reference.b[j], 1e-5)
        << "bias " << j << " at iteration " << solver.iter();
  }
}

XTRAIN_DEVICE_TEST(SGDSolver, LrMultAndDecayMultPerParameterL2) {
  const std::string specs = std::string(kLinearInit) +
                            "param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }";
  auto solver = create_solver(make_solver(linear_regression_net(2, 2, 2, true, specs),
                                          "base_lr: 0.05 momentum: 0.9 weight_decay: 0.01"),
                              quiet());
  ReferenceSgd reference;
  for (int it = 0; it < 4; ++it) {
    solver->step(1);
    reference.step(2, 1, 0.05, 0.9, 0.01, false, 1, 1, 2, 0, -1);
    expect_matches_reference(*solver, reference);
  }
}

XTRAIN_DEVICE_TEST(SGDSolver, LrMultAndDecayMultPerParameterL1WithStepPolicy) {
  const std::string specs =
      std::string(kLinearInit) + "param { lr_mult: 0.5 decay_mult: 2 } param { lr_mult: 0 }";
  auto solver = create_solver(
      make_solver(linear_regression_net(1, 2, 2, true, specs),
                  "base_lr: 0.2 lr_policy: 'step' gamma: 0.5 stepsize: 2 momentum: 0.8 "
                  "weight_decay: 0.05 regularization_type: 'L1'"),
      quiet());
  ReferenceSgd reference;
  const double rates[] = {0.2, 0.2, 0.1, 0.1};
  for (double rate : rates) {
    solver->step(1);
    reference.step(1, 1, rate, 0.8, 0.05, true, 0.5, 2, 0, 1, -1);
    expect_matches_reference(*solver, reference);
  }
  // lr_mult 0 freezes the bias even though it decays.
  EXPECT_FLOAT_EQ(weight(*solver, 1, 0), 0.1f);
}

XTRAIN_DEVICE_TEST(SGDSolver, IterSizeTwoEqualsABatchTwiceAsBig) {
  const std::string extra = "base_lr: 0.1 momentum: 0.9 weight_decay: 0.01";
  auto accumulated = create_solver(
      make_solver(linear_regression_net(1, 2, 2, true, kLinearInit), extra + " iter_size: 2"),
      quiet());
  auto big_batch =
      create_solver(make_solver(linear_regression_net(2, 2, 2, true, kLinearInit), extra), quiet());
  ReferenceSgd reference;
  for (int it = 0; it < 3; ++it) {
    accumulated->step(1);
    big_batch->step(1);
    reference.step(1, 2, 0.1, 0.9, 0.01, false, 1, 1, 1, 1, -1);
    expect_matches_reference(*accumulated, reference);
    expect_matches_reference(*big_batch, reference);
  }
}

XTRAIN_DEVICE_TEST(SGDSolver, ClipGradientsScalesTheGlobalNorm) {
  auto solver =
      create_solver(make_solver(linear_regression_net(2, 2, 2, true, kLinearInit),
                                "base_lr: 0.1 momentum: 0.9 clip_gradients: 0.05 iter_size: 2"),
                    quiet());
  ReferenceSgd reference;
  for (int it = 0; it < 3; ++it) {
    solver->step(1);
    reference.step(2, 2, 0.1, 0.9, 0, false, 1, 1, 1, 1, 0.05);
    expect_matches_reference(*solver, reference);
  }
  EXPECT_GT(reference.clip_events, 0);  // the test really clips
}

XTRAIN_DEVICE_TEST(SGDSolver, GradientsReadyCallbackRunsOncePerIterationBeforeTheUpdate) {
  auto solver = create_solver(make_solver(scalar_net(), "momentum: 0.9"), quiet());
  std::vector<int> seen_iters;
  std::vector<float> seen_diffs;
  solver->add_gradients_ready_callback([&](Solver& s) {
    seen_iters.push_back(s.iter());
    Blob& w = *s.net().learnable_params()[0];
    seen_diffs.push_back(w.cpu_diff()[0]);
    w.mutable_cpu_diff()[0] = 0;  // e.g. an all-reduce rewriting the gradients
  });
  solver->step(3);
  EXPECT_EQ(seen_iters, (std::vector<int>{0, 1, 2}));
  // The first gradient is w x^2 = 1 (w = 1, x = 1); later ones follow the
  // unchanged w = 1 with x = 2, -1.
  ASSERT_EQ(seen_diffs.size(), 3u);
  EXPECT_FLOAT_EQ(seen_diffs[0], 1.0f);
  EXPECT_FLOAT_EQ(seen_diffs[1], 4.0f);
  EXPECT_FLOAT_EQ(seen_diffs[2], 1.0f);
  // Zeroed gradients: no update at all.
  EXPECT_FLOAT_EQ(weight(*solver, 0), 1.0f);
}

XTRAIN_DEVICE_TEST(SGDSolver, IterationStartCallbackRunsOncePerIterationBeforeForward) {
  // iter_size 2: two forward/backward passes per iteration, one start.
  auto solver = create_solver(make_solver(scalar_net(), "iter_size: 2"), quiet());
  std::vector<std::string> events;
  std::vector<float> seen_diffs;
  solver->add_iteration_start_callback([&](Solver& s) {
    events.push_back("start " + std::to_string(s.iter()));
    // Set before forward, so this iteration's gradient must follow w = 2.
    s.net().learnable_params()[0]->mutable_cpu_data()[0] = 2;
  });
  solver->add_gradients_ready_callback([&](Solver& s) {
    events.push_back("ready " + std::to_string(s.iter()));
    seen_diffs.push_back(s.net().learnable_params()[0]->cpu_diff()[0]);
  });
  solver->step(2);
  EXPECT_EQ(events, (std::vector<std::string>{"start 0", "ready 0", "start 1", "ready 1"}));
  // dloss/dw = w x^2 summed over the two passes (the update takes the mean):
  // x = 1, 2 then -1, 0.5, with w = 2 each time: 2 + 8 = 10, then 2 + 0.5.
  ASSERT_EQ(seen_diffs.size(), 2u);
  EXPECT_FLOAT_EQ(seen_diffs[0], 10.0f);
  EXPECT_FLOAT_EQ(seen_diffs[1], 2.5f);
}

std::string creation_error(const SolverParameter& param) {
  try {
    create_solver(param, quiet());
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(SGDSolver, UnknownTypesAndBothTypeFieldsAreErrors) {
  SolverParameter both = make_solver(scalar_net(), "solver_type: SGD type: 'SGD'");
  EXPECT_NE(creation_error(both).find("both solver_type"), std::string::npos);
  SolverParameter unknown = make_solver(scalar_net(), "type: 'Magic'");
  EXPECT_EQ(creation_error(unknown),
            "unknown solver type 'Magic' (known: SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam)");
  SolverParameter legacy_sgd = make_solver(scalar_net(), "solver_type: SGD");
  EXPECT_STREQ(create_solver(legacy_sgd, quiet())->type(), "SGD");
}

TEST(SGDSolver, UnknownRegularizationIsAnErrorWhenDecayIsUsed) {
  SolverParameter bad = make_solver(scalar_net(), "weight_decay: 0.1 regularization_type: 'L3'");
  EXPECT_NE(creation_error(bad).find("unknown regularization_type \"L3\""), std::string::npos);
  // Without decay Caffe never looks at the type.
  SolverParameter unused = make_solver(scalar_net(), "regularization_type: 'L3'");
  EXPECT_NO_THROW(create_solver(unused, quiet()));
}

}  // namespace
}  // namespace xtrain

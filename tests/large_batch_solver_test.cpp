// NVIDIA Caffe 0.17's large-batch settings in the solvers: LARC (scale,
// clip, turbo), the momentum and weight-decay policies and the warm-up,
// stepped by hand on the solver test nets (tests/solver_test_net.hpp); the
// display line; and the settings refused at construction.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "device_test_support.hpp"
#include "solver_test_net.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::unique_ptr<Solver> make(const NetParameter& net, const std::string& extra) {
  return create_solver(solver_param(net, extra), quiet_solver_options());
}

float value(const Solver& solver, int param, int index = 0) {
  return solver.net().learnable_params()[param]->cpu_data()[index];
}

// The scalar net: w = 1, x = 1, 2, -1, ...; loss (w x)^2 / 2, g = w x^2.
void expect_scalar_weights(Solver& solver, const std::vector<double>& expected) {
  for (double w : expected) {
    solver.step(1);
    EXPECT_NEAR(value(solver, 0), w, 1e-6) << solver.type() << " after iteration " << solver.iter();
  }
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, WarmUpStepsWithTheRampedRate) {
  // rampup_interval 2, rampup_lr 0: rate 0, then 0.1 * (1/2)^2 = 0.025, then 0.1.
  //   it 0: rate 0:                       w = 1
  //   it 1: x = 2: g = 4,   0.025 * 4   -> w = 0.9
  //   it 2: x = -1: g = 0.9, 0.1 * 0.9  -> w = 0.81
  auto solver = make(scalar_net(), "base_lr: 0.1 rampup_interval: 2");
  expect_scalar_weights(*solver, {1.0, 0.9, 0.81});
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, SgdMomentumPoly) {
  // lr 0.1; m = 0.5 + (0.9 - 0.5) it / 4 = 0.5, 0.6, 0.7:
  //   it 0: g = 1,            v = 0.1,                 w = 0.9
  //   it 1: g = 0.9 * 4 = 3.6, v = 0.06 + 0.36 = 0.42,  w = 0.48
  //   it 2: g = 0.48,          v = 0.294 + 0.048 = 0.342, w = 0.138
  auto solver =
      make(scalar_net(), "momentum: 0.5 momentum_policy: 'poly' max_momentum: 0.9 max_iter: 4");
  expect_scalar_weights(*solver, {0.9, 0.48, 0.138});
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, SgdMomentumOpt) {
  // lr 0.04: m = (1 - sqrt(0.04) / 2)^2 = 0.81:
  //   it 0: g = 1,              v = 0.04,                      w = 0.96
  //   it 1: g = 0.96 * 4 = 3.84, v = 0.0324 + 0.1536 = 0.186,   w = 0.774
  //   it 2: g = 0.774,           v = 0.15066 + 0.03096 = 0.18162, w = 0.59238
  auto solver = make(scalar_net(), "base_lr: 0.04 momentum_policy: 'opt'");
  expect_scalar_weights(*solver, {0.96, 0.774, 0.59238});
  // max_momentum 0.5 caps it:
  //   it 1: v = 0.02 + 0.1536 = 0.1736,             w = 0.7864
  //   it 2: g = 0.7864, v = 0.0868 + 0.031456,      w = 0.668144
  auto capped = make(scalar_net(), "base_lr: 0.04 momentum_policy: 'opt' max_momentum: 0.5");
  expect_scalar_weights(*capped, {0.96, 0.7864, 0.668144});
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, NesterovMomentumPoly) {
  // lr 0.1, m = 0.5, 0.6, 0.7; step = (1 + m) v' - m v:
  //   it 0: g = 1:    v' = 0.1,               step = 0.15,              w = 0.85
  //   it 1: g = 3.4:  v' = 0.06 + 0.34 = 0.4, step = 0.64 - 0.06 = 0.58, w = 0.27
  //   it 2: g = 0.27: v' = 0.28 + 0.027 = 0.307, step = 0.5219 - 0.28,  w = 0.0281
  auto solver = make(scalar_net(),
                     "type: 'Nesterov' momentum: 0.5 momentum_policy: 'poly' max_momentum: 0.9 "
                     "max_iter: 4");
  expect_scalar_weights(*solver, {0.85, 0.27, 0.0281});
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, SgdWeightDecayPoly) {
  // lr 0.1, no momentum; d = 0.1 + (0.5 - 0.1) it / 4 = 0.1, 0.2, 0.3:
  //   it 0: g = 1 + 0.1 = 1.1,                    w = 0.89
  //   it 1: g = 0.89 * 4 + 0.2 * 0.89 = 3.738,     w = 0.5162
  //   it 2: g = 0.5162 + 0.3 * 0.5162 = 0.67106,   w = 0.449094
  auto solver = make(scalar_net(),
                     "weight_decay: 0.1 weight_decay_policy: 'poly' max_weight_decay: 0.5 "
                     "max_iter: 4");
  expect_scalar_weights(*solver, {0.89, 0.5162, 0.449094});
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, AdamDecaysByTheWeightDecayPolicyToo) {
  // NVIDIA Caffe's GPU path decays every rule by the policy. Adam's first
  // step is r * sign(g) whatever the decay, so look at the second:
  //   it 0: g = 1 + 0.1 = 1.1: m = 0.11, v = 0.00121, w = 0.9
  //   it 1: d = 0.3: g = 3.6 + 0.27 = 3.87: m = 0.099 + 0.387 = 0.486,
  //         v = 0.00120879 + 0.01497690 = 0.01618569,
  //         step = 0.1 sqrt(1 - 0.999^2) / (1 - 0.81) * 0.486 / sqrt(v) = 0.08989249,
  //         w = 0.9000000287 - 0.08989249 = 0.8101075367 (with the decay fixed at
  //         0.1 it is 0.8095512157, AdamSolver.ByHand's)
  auto solver = make(scalar_net(),
                     "type: 'Adam' momentum: 0.9 momentum2: 0.999 weight_decay: 0.1 "
                     "weight_decay_policy: 'poly' max_weight_decay: 0.5 max_iter: 2");
  solver->step(2);
  EXPECT_NEAR(value(*solver, 0), 0.8101075367, 2e-6);
}

// ---------------------------------------------------------------------------
// LARC on an InnerProduct of two weights and a bias: w = (3, 4), b = 1; batch
// 1 of the rows x = (1, 0.5), then (2, -1); y = w.x + b, loss y^2 / 2, so
// g_w = y x and g_b = y. momentum 0.9, weight_decay 0.01 (L2). Per
// parameter:
//   t = (1 - 0.9) * larc_eta * ||w|| / ||g||   (||g||: before the decay)
//   r = rate * t ("scale") or min(rate, t) ("clip")
//   v = 0.9 v + r (g + 0.01 w),  w -= v
const char* const kTwoWeightsAndABias =
    "blobs { shape { dim: 1 dim: 2 } data: 3 data: 4 }\n"
    "blobs { shape { dim: 1 } data: 1 }\n";

std::unique_ptr<Solver> larc_solver(const std::string& settings,
                                    const std::string& param_specs = "") {
  return make(linear_regression_net(1, 2, 1, true, std::string(kTwoWeightsAndABias) + param_specs),
              "momentum: 0.9 weight_decay: 0.01 larc: true " + settings);
}

void expect_larc_values(const Solver& solver, double w0, double w1, double b) {
  EXPECT_NEAR(value(solver, 0, 0), w0, 2e-6) << "w[0] after iteration " << solver.iter();
  EXPECT_NEAR(value(solver, 0, 1), w1, 2e-6) << "w[1] after iteration " << solver.iter();
  EXPECT_NEAR(value(solver, 1), b, 2e-6) << "b after iteration " << solver.iter();
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, LarcScaleByHand) {
  // base_lr 1, larc_eta 0.5. The bias's lr_mult 2 is replaced by LARC's
  // ratio, as in NVIDIA Caffe.
  //   it 0: y = 3 + 2 + 1 = 6, g_w = (6, 3), g_b = 6
  //     w: ||w|| = 5, ||g|| = sqrt(45) = 6.708203932, t = 0.05 * 5 / 6.708203932
  //        = 0.03726779962; v = t (6.03, 3.04) = (0.2247248317, 0.1132941109)
  //        w = (2.775275168, 3.886705889)
  //     b: t = 0.05 * 1 / 6 = 0.008333333333; v = t * 6.01 = 0.05008333333
  //        b = 0.9499166667
  //   it 1: x = (2, -1): y = 2.613761114, g_w = (5.227522228, -2.613761114)
  //     w: ||w|| = 4.775838662, ||g|| = 5.844547528, t = 0.04085721469
  //        v = 0.9 v + t (g_w + 0.01 w) = (0.4169682467, -0.003238299441)
  //        w = (2.358306922, 3.889944189)
  //     b: ||b|| = 0.9499166667, ||g|| = 2.613761114, t = 0.01817145151
  //        v = 0.04507500000 + t * 2.623260281 = 0.09274344698, b = 0.8571732197
  auto solver = larc_solver("base_lr: 1 larc_eta: 0.5", "param { } param { lr_mult: 2 }");
  solver->step(1);
  expect_larc_values(*solver, 2.775275168, 3.886705889, 0.9499166667);
  solver->step(1);
  expect_larc_values(*solver, 2.358306922, 3.889944189, 0.8571732197);
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, LarcClipByHand) {
  // base_lr 0.02, larc_eta 0.5: the weights' t (0.0373, then 0.0394) is
  // capped by the rate, the bias's (0.00833, then 0.01715) is not.
  //   it 0: w: r = 0.02: v = 0.02 (6.03, 3.04) = (0.1206, 0.0608), w = (2.8794, 3.9392)
  //         b: r = 0.008333333333: as with "scale", b = 0.9499166667
  //   it 1: y = 5.7588 - 3.9392 + 0.9499166667 = 2.769516667
  //         w: v = 0.9 (0.1206, 0.0608) + 0.02 (5.539033333 + 0.028794, -2.769516667 + 0.039392)
  //            = (0.2198965467, 0.0001175066667), w = (2.659503453, 3.939082493)
  //         b: ||g|| = 2.769516667, t = 0.05 * 0.9499166667 / 2.769516667 = 0.01714950262
  //            v = 0.04507500000 + t * 2.779015833 = 0.09273373932, b = 0.8571829273
  auto solver = larc_solver("base_lr: 0.02 larc_eta: 0.5 larc_policy: 'clip'");
  solver->step(1);
  expect_larc_values(*solver, 2.8794, 3.9392, 0.9499166667);
  solver->step(1);
  expect_larc_values(*solver, 2.659503453, 3.939082493, 0.8571829273);
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, LarcTurboByHand) {
  // base_lr 1, larc_eta 2, "scale". turbo: c = 0.95 c + 0.05 cos(g, v),
  // t -= 0.9 c, v the velocity before the step.
  //   it 0: v = 0, so cos = 0 and c = 0: t as without turbo
  //     w: t = 0.2 * 5 / 6.708203932 = 0.1490711985; v = (0.898899327, 0.4531764434)
  //        w = (2.101100673, 3.546823557)
  //     b: t = 0.2 / 6 = 0.03333333333; v = 0.2003333333, b = 0.7996666667
  //   it 1: y = 4.202201346 - 3.546823557 + 0.7996666667 = 1.455044456
  //     w: g = (2.910088912, -1.455044456), ||w|| = 4.122448469, ||g|| = 3.253578314
  //        cos = (2.615897 - 0.659399) / (3.253578314 * 1.006651) = 0.5973477186
  //        c = 0.02986738593, t = 0.253410127 - 0.9 c = 0.2265294797
  //        v = (1.472989934, 0.08628293651), w = (0.6281107393, 3.46054062)
  //     b: cos = 1 (both positive), c = 0.05, t = 0.1099164583 - 0.045 = 0.06491645833
  //        v = 0.1803 + t * 1.463041123 = 0.2752754481, b = 0.5243912186
  auto solver = larc_solver("base_lr: 1 larc_eta: 2 larc_turbo: true");
  solver->step(1);
  expect_larc_values(*solver, 2.101100673, 3.546823557, 0.7996666667);
  solver->step(1);
  expect_larc_values(*solver, 0.6281107393, 3.46054062, 0.5243912186);
}

// larc_turbo's correlations travel in the .solverstate: a run resumed from
// a snapshot takes the steps the uninterrupted one takes. Without them (a
// state as NVIDIA Caffe writes it) the correlations restart from 0 and the
// steps differ, which shows that the test can tell.
XTRAIN_DEVICE_TEST(LargeBatchSolver, LarcTurboResumesExactly) {
  TempDir dir("larc_turbo_resume");
  const std::string settings =
      "base_lr: 0.1 larc_eta: 2 larc_turbo: true snapshot_prefix: '" + dir.file("run") + "'";
  // Snapshot after 4 steps: the test rows cycle every 4, so a new solver's
  // rows (which have no resume state) go on where the straight run's do.
  auto straight = larc_solver(settings);
  straight->step(4);
  const std::string state_path = straight->snapshot().back();
  straight->step(3);

  auto resumed = larc_solver(settings);
  resumed->restore(state_path);
  resumed->step(3);
  for (int param = 0; param < 2; ++param) {
    const int count = param == 0 ? 2 : 1;
    for (int i = 0; i < count; ++i) {
      EXPECT_EQ(value(*resumed, param, i), value(*straight, param, i))
          << "parameter " << param << " value " << i;
    }
  }

  SolverState state;
  read_proto_from_binary_file(state_path, &state);
  ASSERT_EQ(state.resume().larc_correlation_size(), 2);
  state.mutable_resume()->clear_larc_correlation();
  state.clear_file_crc32();
  const std::string caffe_style = dir.file("caffe_style.solverstate");
  write_proto_to_binary_file(state, caffe_style);
  auto restarted = larc_solver(settings);
  restarted->restore(caffe_style);
  restarted->step(3);
  EXPECT_NE(value(*restarted, 0, 0), value(*straight, 0, 0))
      << "the correlations made no difference: the test cannot tell an exact resume";
}

XTRAIN_DEVICE_TEST(LargeBatchSolver, LarcKeepsAParameterWithLrMultZeroFrozen) {
  auto solver = larc_solver("base_lr: 1 larc_eta: 0.5", "param { } param { lr_mult: 0 }");
  // The weights follow LarcScaleByHand's first step; at the second the
  // unmoved bias (1) makes y = 2.625275168 and w = (2.358328240, 3.889974045).
  solver->step(2);
  EXPECT_EQ(value(*solver, 1), 1.0f);
  EXPECT_NEAR(value(*solver, 0, 0), 2.358328240, 2e-6);
  EXPECT_NEAR(value(*solver, 0, 1), 3.889974045, 2e-6);
  // "clip": min(rate, 0) = 0 as well.
  auto clip =
      larc_solver("base_lr: 1 larc_eta: 0.5 larc_policy: 'clip'", "param { } param { lr_mult: 0 }");
  clip->step(2);
  EXPECT_EQ(value(*clip, 1), 1.0f);
}

// Explicit defaults change nothing: the same weights, bit for bit, as a
// solver without the fields (the by-hand tests of sgd_solver_test.cpp and
// adaptive_solvers_test.cpp pin those to Caffe 1.0's).
XTRAIN_DEVICE_TEST(LargeBatchSolver, DefaultSettingsChangeNoBit) {
  const char* const rules[] = {"type: 'SGD' momentum: 0.9", "type: 'Nesterov' momentum: 0.9",
                               "type: 'Adam' momentum: 0.9", "type: 'AdaGrad'"};
  for (const char* rule : rules) {
    const std::string common = std::string(rule) +
                               " base_lr: 0.05 lr_policy: 'poly' power: 0.5 max_iter: 6 "
                               "weight_decay: 0.01";
    auto plain = make(linear_regression_net(2, 2, 2, true), common);
    auto defaults = make(linear_regression_net(2, 2, 2, true),
                         common +
                             " momentum_policy: 'fixed' weight_decay_policy: 'fixed' min_lr: 0 "
                             "rampup_interval: 0 rampup_lr: 0 larc: false");
    plain->step(5);
    defaults->step(5);
    for (int p = 0; p < 2; ++p) {
      const Blob& a = *plain->net().learnable_params()[p];
      const Blob& b = *defaults->net().learnable_params()[p];
      for (std::size_t j = 0; j < a.count(); ++j) {
        EXPECT_EQ(a.cpu_data()[j], b.cpu_data()[j]) << rule << ": param " << p << "[" << j << "]";
      }
    }
  }
}

TEST(LargeBatchSolver, TheDisplayLineShowsMomentumAndDecayWhenTheyFollowAPolicy) {
  SolverParameter scheduled =
      solver_param(scalar_net(),
                   "display: 1 max_iter: 2 momentum: 0.5 momentum_policy: 'poly' max_momentum: 0.9 "
                   "weight_decay: 0.1 weight_decay_policy: 'poly' max_weight_decay: 0.3");
  auto solver = create_solver(scheduled, quiet_solver_options());
  const std::string log = solve_and_capture_log(*solver);
  EXPECT_NE(log.find("Iteration 0, lr = 0.1, m = 0.5, wd = 0.1\n"), std::string::npos) << log;
  EXPECT_NE(log.find("Iteration 1, lr = 0.1, m = 0.7, wd = 0.2\n"), std::string::npos) << log;

  auto momentum_only = create_solver(
      solver_param(scalar_net(), "display: 1 max_iter: 1 momentum_policy: 'opt' base_lr: 0.04"),
      quiet_solver_options());
  const std::string momentum_log = solve_and_capture_log(*momentum_only);
  EXPECT_NE(momentum_log.find("Iteration 0, lr = 0.04, m = 0.81\n"), std::string::npos)
      << momentum_log;

  // Caffe's line, unchanged, when neither varies (LARC's rates are the
  // parameters' own; the line keeps the iteration's).
  auto fixed =
      create_solver(solver_param(scalar_net(), "display: 1 max_iter: 1 momentum: 0.9 larc: true"),
                    quiet_solver_options());
  const std::string fixed_log = solve_and_capture_log(*fixed);
  EXPECT_NE(fixed_log.find("Iteration 0, lr = 0.1\n"), std::string::npos) << fixed_log;
}

std::string creation_error(const std::string& settings) {
  try {
    create_solver(solver_param(scalar_net(), settings), quiet_solver_options());
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(LargeBatchSolver, BadSettingsAreRefusedAtConstructionNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"larc: true larc_policy: 'trim'",
       "unknown larc_policy \"trim\"; use one of: scale (the rate times LARC's), clip"},
      {"larc: true larc_eta: 0", "larc_eta must be > 0, but the solver sets larc_eta: 0"},
      {"larc: true larc_eta: -0.001", "larc_eta must be > 0"},
      {"larc: true larc_eta: nan", "the solver's larc_eta is nan"},
      {"momentum_policy: 'cyclic'",
       "unknown momentum_policy \"cyclic\"; use one of: fixed, poly, opt"},
      {"momentum_policy: 'poly' max_momentum: 1", "max_momentum must lie in [0, 1)"},
      {"momentum_policy: 'poly' max_iter: 0", "needs max_iter > 0, got 0"},
      {"weight_decay_policy: 'exp'",
       "unknown weight_decay_policy \"exp\"; use one of: fixed, poly"},
      {"weight_decay: 0.1 weight_decay_policy: 'poly' max_iter: 0", "needs max_iter > 0, got 0"},
      {"min_lr: 0.5", "min_lr: 0.5 must lie in [0, base_lr] (base_lr: 0.1)"},
      {"rampup_interval: -1", "rampup_interval: -1 is negative"},
      {"rampup_interval: 10 rampup_lr: -0.1", "rampup_lr: -0.1 is not a finite rate >= 0"},
      {"type: 'Nesterov' momentum_policy: 'poly' max_momentum: 1.5",
       "max_momentum must lie in [0, 1)"},
      // The rules without a velocity keep their momentum fixed and take no
      // LARC, as NVIDIA Caffe's do; a setting that would change nothing is
      // refused.
      {"type: 'Adam' momentum: 0.9 momentum_policy: 'poly'",
       "momentum_policy \"poly\" schedules the momentum of the SGD and Nesterov solvers; the "
       "Adam solver keeps its momentum fixed"},
      {"type: 'AdaDelta' momentum: 0.95 momentum_policy: 'opt'", "the AdaDelta solver keeps"},
      {"type: 'RMSProp' larc: true",
       "larc: true sets the rate of the SGD and Nesterov solvers' momentum step; the RMSProp "
       "solver has none"},
      {"type: 'AdaGrad' larc: true", "remove larc"},
  };
  for (const auto& [settings, said] : cases) {
    const std::string error = creation_error(settings);
    EXPECT_NE(error.find(said), std::string::npos) << settings << " gave: " << error;
  }
}

}  // namespace
}  // namespace xtrain

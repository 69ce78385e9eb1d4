// Nesterov, AdaGrad, RMSProp, AdaDelta and Adam: updates worked out by hand
// for a one-weight net, a double-precision reference of each rule (with L2/L1
// decay, lr_mult/decay_mult and iter_size) over several steps, the history a
// .solverstate holds (two sets, in Caffe's order, for AdaDelta and Adam),
// resuming from a snapshot, selection by type or legacy enum, and Caffe's
// checks on the settings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "solver_test_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

using namespace testing;

SolverOptions quiet() { return testing::quiet_solver_options(); }

std::unique_ptr<Solver> make(const NetParameter& net, const std::string& extra) {
  return create_solver(testing::solver_param(net, extra), quiet());
}

float weight(const Solver& solver, int param, int index = 0) {
  return solver.net().learnable_params()[param]->cpu_data()[index];
}

void expect_weights(Solver& solver, const std::vector<double>& expected, double tolerance) {
  for (double w : expected) {
    solver.step(1);
    EXPECT_NEAR(weight(solver, 0), w, tolerance)
        << solver.type() << " after iteration " << solver.iter();
  }
}

// The scalar net: w = 1, x = 1, 2, -1, ...; loss (w x)^2 / 2, so with
// weight_decay 0.1 (L2) the gradient is g = w x^2 + 0.1 w.

XTRAIN_DEVICE_TEST(NesterovSolver, ByHand) {
  // lr 0.1, momentum 0.9; step = 1.9 v' - 0.9 v:
  //   it 0: g = 1.1,     v' = 0.11,                  step = 0.209,     w = 0.791
  //   it 1: g = 3.2431,  v' = 0.099 + 0.32431,       step = 0.705289,  w = 0.085711
  //   it 2: g = 0.0942821, v' = 0.380979 + 0.00942821, step = 0.3607947, w = -0.2750837
  auto solver = make(scalar_net(), "type: 'Nesterov' momentum: 0.9 weight_decay: 0.1");
  expect_weights(*solver, {0.791, 0.085711, -0.275083699}, 1e-6);
}

XTRAIN_DEVICE_TEST(AdaGradSolver, ByHand) {
  // lr 0.1, delta 1e-8 (default); step = 0.1 g / sqrt(h), h = sum of g^2:
  //   it 0: g = 1.1,       h = 1.21,        step = 0.1,          w = 0.9
  //   it 1: g = 3.69,      h = 14.8261,     step = 0.369/3.8505, w = 0.80416748
  //   it 2: g = 0.8845842, h = 15.6085893,  step = 0.0223902,    w = 0.78177731
  auto solver = make(scalar_net(), "type: 'AdaGrad' weight_decay: 0.1");
  expect_weights(*solver, {0.9, 0.8041674822, 0.7817773135}, 1e-6);
}

XTRAIN_DEVICE_TEST(RMSPropSolver, ByHand) {
  // lr 0.1, rms_decay 0.9; h = 0.9 h + 0.1 g^2, step = 0.1 g / sqrt(h):
  //   it 0: g = 1.1,       h = 0.121,       step = 0.11/0.347851, w = 0.68377224
  //   it 1: g = 2.8034662, h = 0.89484227,  step = 0.2963617,     w = 0.38741055
  //   it 2: g = 0.4261516, h = 0.82351856,  step = 0.0469599,     w = 0.34045062
  auto solver = make(scalar_net(), "type: 'RMSProp' rms_decay: 0.9 weight_decay: 0.1");
  expect_weights(*solver, {0.6837722431, 0.3874105457, 0.3404506177}, 1e-6);
}

XTRAIN_DEVICE_TEST(AdaDeltaSolver, ByHand) {
  // lr 1, rho (momentum) 0.9, delta 1e-6:
  //   it 0: g = 1.1: h_g = 0.121, u = 1.1 sqrt(1e-6 / 0.121001) = 0.00316226,
  //         h_u = 1e-6, w = 0.99683774
  //   it 1: g = 4.0870347: h_g = 1.77928528, u = 0.00433311, w = 0.99250463
  //   it 2: g = 1.0917551: h_g = 1.72054967, u = 0.00161770, w = 0.99088693
  auto solver =
      make(scalar_net(), "type: 'AdaDelta' base_lr: 1 momentum: 0.9 delta: 1e-6 weight_decay: 0.1");
  expect_weights(*solver, {0.9968377354, 0.9925046274, 0.9908869272}, 1e-6);
}

XTRAIN_DEVICE_TEST(AdamSolver, ByHand) {
  // lr 0.1, beta1 0.9, beta2 0.999, eps 1e-8; t = iter + 1:
  //   it 0: g = 1.1: m = 0.11, v = 0.00121; the corrected ratio is exactly
  //         sign(g), so step = 0.1, w = 0.9
  //   it 1: g = 3.69: m = 0.468, v = 0.01482489,
  //         step = 0.1 sqrt(1 - 0.999^2) / (1 - 0.9^2) * m / sqrt(v) = 0.0904488
  //   it 2: g = 0.8905063: m = 0.51025064, v = 0.01560307, step = 0.0825188
  auto solver = make(scalar_net(), "type: 'Adam' momentum: 0.9 momentum2: 0.999 weight_decay: 0.1");
  expect_weights(*solver, {0.9000000287, 0.8095512157, 0.7270324571}, 2e-6);
}

// ---------------------------------------------------------------------------
// The same rules in double precision on the linear regression net.

// One rule: the step for gradient g of one element whose state (one value per
// history set) is `state`, at iteration `iter` with rate r = lr * lr_mult.
using ReferenceRule = std::function<double(double g, double* state, int iter, double r)>;

struct RuleCase {
  const char* name;
  std::string solver_text;  // type and settings
  int history_sets;
  ReferenceRule rule;
};

ReferenceRule sgd_rule(double momentum) {
  return [momentum](double g, double* s, int, double r) { return s[0] = momentum * s[0] + r * g; };
}

ReferenceRule nesterov_rule(double momentum) {
  return [momentum](double g, double* s, int, double r) {
    const double previous = s[0];
    s[0] = momentum * s[0] + r * g;
    return (1 + momentum) * s[0] - momentum * previous;
  };
}

ReferenceRule adagrad_rule(double delta) {
  return [delta](double g, double* s, int, double r) {
    s[0] += g * g;
    return r * g / (std::sqrt(s[0]) + delta);
  };
}

ReferenceRule rmsprop_rule(double decay, double delta) {
  return [decay, delta](double g, double* s, int, double r) {
    s[0] = decay * s[0] + (1 - decay) * g * g;
    return r * g / (std::sqrt(s[0]) + delta);
  };
}

ReferenceRule adadelta_rule(double rho, double delta) {
  return [rho, delta](double g, double* s, int, double r) {
    s[0] = rho * s[0] + (1 - rho) * g * g;
    const double update = g * std::sqrt((s[1] + delta) / (s[0] + delta));
    s[1] = rho * s[1] + (1 - rho) * update * update;
    return r * update;
  };
}

ReferenceRule adam_rule(double beta1, double beta2, double eps) {
  return [beta1, beta2, eps](double g, double* s, int iter, double r) {
    s[0] = beta1 * s[0] + (1 - beta1) * g;
    s[1] = beta2 * s[1] + (1 - beta2) * g * g;
    const int t = iter + 1;
    const double correction = std::sqrt(1 - std::pow(beta2, t)) / (1 - std::pow(beta1, t));
    return r * correction * s[0] / (std::sqrt(s[1]) + eps);
  };
}

// The linear regression net (2 inputs, 2 outputs, bias) trained by `rule`.
struct ReferenceSolver {
  static constexpr int kInputs = 2;
  static constexpr int kOutputs = 2;
  // params[0] = W (outputs x inputs), params[1] = b.
  std::vector<std::vector<double>> params = {{0.5, -0.3, 0.2, 0.4}, {0.1, -0.2}};
  // history[set][param][element]
  std::vector<std::vector<std::vector<double>>> history;
  int cursor = 0;
  int iter = 0;

  explicit ReferenceSolver(int sets) {
    for (int set = 0; set < sets; ++set) {
      history.push_back({std::vector<double>(4, 0.0), std::vector<double>(2, 0.0)});
    }
  }

  struct Settings {
    int batch = 2;
    int iter_size = 1;
    double rate = 0.1;
    double weight_decay = 0;
    bool l1 = false;
    double lr_mult[2] = {1, 1};
    double decay_mult[2] = {1, 1};
  };

  void step(const ReferenceRule& rule, const Settings& s) {
    std::vector<std::vector<double>> grads = {std::vector<double>(4, 0.0),
                                              std::vector<double>(2, 0.0)};
    for (int pass = 0; pass < s.iter_size; ++pass) {
      for (int n = 0; n < s.batch; ++n, ++cursor) {
        const float* x = kRows[cursor % kRowCount];
        for (int o = 0; o < kOutputs; ++o) {
          double y = params[1][o];
          for (int i = 0; i < kInputs; ++i) y += params[0][o * kInputs + i] * x[i];
          const double dy = y / s.batch;  // loss = sum(y^2) / (2 batch)
          for (int i = 0; i < kInputs; ++i) grads[0][o * kInputs + i] += dy * x[i];
          grads[1][o] += dy;
        }
      }
    }
    for (int p = 0; p < 2; ++p) {
      for (std::size_t j = 0; j < params[p].size(); ++j) {
        const double value = params[p][j];
        const double sign = (value > 0) - (value < 0);
        double g = grads[p][j] / s.iter_size;
        g += s.weight_decay * s.decay_mult[p] * (s.l1 ? sign : value);
        double state[2] = {0, 0};
        for (std::size_t set = 0; set < history.size(); ++set) state[set] = history[set][p][j];
        params[p][j] -= rule(g, state, iter, s.rate * s.lr_mult[p]);
        for (std::size_t set = 0; set < history.size(); ++set) history[set][p][j] = state[set];
      }
    }
    ++iter;
  }
};

const char* const kLinearInit =
    "blobs { shape { dim: 2 dim: 2 } data: 0.5 data: -0.3 data: 0.2 data: 0.4 }\n"
    "blobs { shape { dim: 2 } data: 0.1 data: -0.2 }\n";

void expect_matches(const Solver& solver, const ReferenceSolver& reference, double tolerance) {
  for (int p = 0; p < 2; ++p) {
    for (std::size_t j = 0; j < reference.params[p].size(); ++j) {
      EXPECT_NEAR(weight(solver, p, static_cast<int>(j)), reference.params[p][j], tolerance)
          << solver.type() << ": param " << p << " element " << j << " at iteration "
          << solver.iter();
    }
  }
}

class ReferenceRuleTest : public testing::DeviceTestWithParam<RuleCase> {};

void PrintTo(const RuleCase& c, std::ostream* out) { *out << c.name; }

TEST_P(ReferenceRuleTest, L2DecayAndPerParameterMultipliers) {
  const RuleCase& c = GetParam();
  const std::string specs = std::string(kLinearInit) +
                            "param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }";
  auto solver = make(linear_regression_net(2, 2, 2, true, specs),
                     c.solver_text + " base_lr: 0.05 weight_decay: 0.01");
  ReferenceSolver reference(c.history_sets);
  ReferenceSolver::Settings settings;
  settings.rate = 0.05;
  settings.weight_decay = 0.01;
  settings.lr_mult[1] = 2;
  settings.decay_mult[1] = 0;
  for (int it = 0; it < 4; ++it) {
    solver->step(1);
    reference.step(c.rule, settings);
    expect_matches(*solver, reference, 2e-5);
  }
}

TEST_P(ReferenceRuleTest, L1DecayStepPolicyAndIterSize) {
  const RuleCase& c = GetParam();
  const std::string specs =
      std::string(kLinearInit) + "param { lr_mult: 0.5 decay_mult: 2 } param { lr_mult: 1.5 }";
  auto solver = make(linear_regression_net(1, 2, 2, true, specs),
                     c.solver_text +
                         " base_lr: 0.2 lr_policy: 'step' gamma: 0.5 stepsize: 2 iter_size: 2 "
                         "weight_decay: 0.05 regularization_type: 'L1'");
  ReferenceSolver reference(c.history_sets);
  ReferenceSolver::Settings settings;
  settings.batch = 1;
  settings.iter_size = 2;
  settings.weight_decay = 0.05;
  settings.l1 = true;
  settings.lr_mult[0] = 0.5;
  settings.lr_mult[1] = 1.5;
  settings.decay_mult[0] = 2;
  for (double rate : {0.2, 0.2, 0.1, 0.1}) {
    settings.rate = rate;
    solver->step(1);
    reference.step(c.rule, settings);
    expect_matches(*solver, reference, 2e-5);
  }
}

// A fresh directory per test, removed afterwards.
class SolverDir {
 public:
  SolverDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "_" + info->name();
    for (char& ch : name) {
      if (ch == '/') ch = '_';
    }
    dir_ = fs::temp_directory_path() /
           ("xtrain_adaptive_solvers_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~SolverDir() { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

std::vector<float> all_weights(const Solver& solver) {
  std::vector<float> values;
  for (const Blob* blob : solver.net().learnable_params()) {
    values.insert(values.end(), blob->cpu_data(), blob->cpu_data() + blob->count());
  }
  return values;
}

TEST_P(ReferenceRuleTest, SolverStateHoldsEveryHistorySetInCaffesOrder) {
  const RuleCase& c = GetParam();
  SolverDir dir;
  SolverParameter param = testing::solver_param(linear_regression_net(2, 2, 2, true, kLinearInit),
                                                c.solver_text + " weight_decay: 0.01");
  param.set_snapshot_prefix(dir.path("lin"));
  auto solver = create_solver(param, quiet());
  ReferenceSolver reference(c.history_sets);
  ReferenceSolver::Settings settings;
  settings.weight_decay = 0.01;
  for (int it = 0; it < 3; ++it) reference.step(c.rule, settings);
  solver->step(3);
  solver->snapshot();

  SolverState state;
  read_proto_from_binary_file(dir.path("lin_iter_3.solverstate"), &state);
  EXPECT_EQ(state.iter(), 3);
  // Set after set: [set 0: W, b][set 1: W, b].
  ASSERT_EQ(state.history_size(), 2 * c.history_sets);
  for (int set = 0; set < c.history_sets; ++set) {
    for (int p = 0; p < 2; ++p) {
      const BlobProto& blob = state.history(set * 2 + p);
      const std::vector<double>& expected = reference.history[set][p];
      ASSERT_EQ(blob.data_size(), static_cast<int>(expected.size()));
      for (int j = 0; j < blob.data_size(); ++j) {
        EXPECT_NEAR(blob.data(j), expected[j], 1e-5 * std::max(1.0, std::fabs(expected[j])))
            << "history set " << set << ", param " << p << ", element " << j;
      }
    }
  }
}

TEST_P(ReferenceRuleTest, ResumingFromASnapshotEqualsAStraightRun) {
  const RuleCase& c = GetParam();
  SolverDir dir;
  auto param_for = [&](int max_iter) {
    SolverParameter param =
        testing::solver_param(linear_regression_net(1, 2, 2, true, kLinearInit),
                              c.solver_text +
                                  " weight_decay: 0.01 lr_policy: 'step' gamma: 0.5 stepsize: 3 "
                                  "snapshot_after_train: true max_iter: " +
                                  std::to_string(max_iter));
    param.set_snapshot_prefix(dir.path("lin"));
    return param;
  };
  auto straight = create_solver(param_for(8), quiet());
  straight->solve();
  ASSERT_EQ(straight->iter(), 8);

  // Stop at 4, a multiple of the 4 data rows, so the resumed run's fresh
  // data layer sees the rows the straight run did.
  auto first_half = create_solver(param_for(4), quiet());
  first_half->solve();
  auto resumed = create_solver(param_for(8), quiet());
  resumed->restore(dir.path("lin_iter_4.solverstate"));
  EXPECT_EQ(resumed->iter(), 4);
  resumed->solve();
  EXPECT_EQ(all_weights(*resumed), all_weights(*straight));

  // The history matters: resuming with every history blob zeroed drifts.
  SolverState state;
  read_proto_from_binary_file(dir.path("lin_iter_4.solverstate"), &state);
  ASSERT_EQ(state.history_size(), 2 * c.history_sets);
  for (BlobProto& blob : *state.mutable_history()) {
    for (int j = 0; j < blob.data_size(); ++j) blob.set_data(j, 0.0f);
  }
  write_proto_to_binary_file(state, dir.path("zeroed.solverstate"));
  auto forgetful = create_solver(param_for(8), quiet());
  forgetful->restore(dir.path("zeroed.solverstate"));
  forgetful->solve();
  EXPECT_NE(all_weights(*forgetful), all_weights(*straight));
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    ReferenceRuleTest,
    ::testing::Values(RuleCase{"SGD", "type: 'SGD' momentum: 0.9", 1, sgd_rule(0.9)},
                      RuleCase{"Nesterov", "type: 'Nesterov' momentum: 0.9", 1, nesterov_rule(0.9)},
                      RuleCase{"AdaGrad", "type: 'AdaGrad' delta: 1e-6", 1, adagrad_rule(1e-6)},
                      RuleCase{"RMSProp", "type: 'RMSProp' rms_decay: 0.95 delta: 1e-6", 1,
                               rmsprop_rule(0.95, 1e-6)},
                      RuleCase{"AdaDelta", "type: 'AdaDelta' momentum: 0.95 delta: 1e-6", 2,
                               adadelta_rule(0.95, 1e-6)},
                      RuleCase{"Adam", "type: 'Adam' momentum: 0.9 momentum2: 0.999 delta: 1e-8", 2,
                               adam_rule(0.9, 0.999, 1e-8)}),
    [](const ::testing::TestParamInfo<RuleCase>& param_info) {
      return std::string(param_info.param.name);
    });

// ---------------------------------------------------------------------------
// Selection and checks.

std::string creation_error(const std::string& extra) {
  try {
    make(scalar_net(), extra);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(SolverFactory, TypeNamesAndTheLegacyEnumSelectTheSameSolvers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"SGD", "SGD"},         {"Nesterov", "NESTEROV"}, {"AdaGrad", "ADAGRAD"},
      {"RMSProp", "RMSPROP"}, {"AdaDelta", "ADADELTA"}, {"Adam", "ADAM"}};
  for (const auto& [name, legacy] : cases) {
    EXPECT_STREQ(make(scalar_net(), "type: '" + name + "'")->type(), name.c_str());
    EXPECT_STREQ(make(scalar_net(), "solver_type: " + legacy)->type(), name.c_str());
  }
  EXPECT_EQ(solver_types(), (std::vector<std::string>{"SGD", "Nesterov", "AdaGrad", "RMSProp",
                                                      "AdaDelta", "Adam"}));
}

TEST(SolverFactory, BothTypeFieldsAreAnErrorEvenWhenTheyAgree) {
  // Caffe's upgrade refuses a solver with both, whatever they say.
  EXPECT_NE(creation_error("solver_type: ADAM type: 'SGD'").find("both solver_type"),
            std::string::npos);
  EXPECT_NE(creation_error("solver_type: ADAM type: 'Adam'").find("both solver_type"),
            std::string::npos);
  EXPECT_EQ(creation_error("type: 'adam'"),
            "unknown solver type 'adam' (known: SGD, Nesterov, AdaGrad, RMSProp, AdaDelta, Adam)");
}

TEST(SolverFactory, CaffesChecksOnTheSettings) {
  EXPECT_EQ(creation_error("type: 'AdaGrad' momentum: 0.9"),
            "the AdaGrad solver does not use momentum, but the solver sets momentum: 0.9; remove "
            "it (or set momentum: 0)");
  EXPECT_NE(creation_error("type: 'RMSProp' momentum: 0.5")
                .find("RMSProp solver does not use "
                      "momentum"),
            std::string::npos);
  EXPECT_NE(creation_error("type: 'RMSProp' rms_decay: 1").find("rms_decay must lie in [0, 1)"),
            std::string::npos);
  EXPECT_NE(creation_error("type: 'RMSProp' rms_decay: -0.1").find("rms_decay: -0.1"),
            std::string::npos);
  EXPECT_EQ(creation_error("type: 'AdaDelta' momentum: 0.95"), "(no error)");
  EXPECT_EQ(creation_error("type: 'Adam' momentum: 0.9"), "(no error)");
  EXPECT_EQ(creation_error("type: 'AdaGrad'"), "(no error)");
}

// Beyond Caffe, which takes them and trains into nan or ever larger steps.
TEST(SolverFactory, SettingsThatTurnTheWeightsNanOrGrowAreRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"type: 'SGD' momentum: 1.5",
       "momentum must lie in [0, 1), but the solver sets momentum: 1.5"},
      {"type: 'Nesterov' momentum: -0.5", "momentum: -0.5"},
      {"type: 'AdaDelta' momentum: 1", "momentum must lie in [0, 1)"},
      {"type: 'Adam' momentum: 1", "momentum must lie in [0, 1)"},
      {"type: 'Adam' momentum2: 1.5", "momentum2 must lie in [0, 1) for the Adam solver"},
      {"type: 'Adam' delta: 0", "the Adam solver needs delta > 0, but the solver sets delta: 0"},
      {"type: 'AdaGrad' delta: -1e-8", "the AdaGrad solver needs delta > 0"},
      {"type: 'RMSProp' delta: 0", "the RMSProp solver needs delta > 0"},
      {"type: 'AdaDelta' momentum: 0.95 delta: 0", "the AdaDelta solver needs delta > 0"},
      {"type: 'SGD' weight_decay: -1", "weight_decay: -1 is not a finite number >= 0"},
      {"type: 'SGD' weight_decay: inf", "weight_decay: inf is not a finite number >= 0"},
      {"type: 'Adam' weight_decay: nan", "the solver's weight_decay is nan"},
  };
  for (const auto& [settings, said] : cases) {
    const std::string error = creation_error(settings);
    EXPECT_NE(error.find(said), std::string::npos) << settings << " gave: " << error;
  }
}

TEST(SolverFactory, AStateWithOneHistorySetDoesNotFitAdam) {
  SolverDir dir;
  SolverParameter sgd = testing::solver_param(scalar_net(), "momentum: 0.9 max_iter: 1");
  sgd.set_snapshot_prefix(dir.path("sgd"));
  auto trained = create_solver(sgd, quiet());
  trained->step(1);
  trained->snapshot();

  auto adam = make(scalar_net(), "type: 'Adam'");
  std::string message;
  try {
    adam->restore(dir.path("sgd_iter_1.solverstate"));
  } catch (const Error& error) {
    message = error.what();
  }
  EXPECT_NE(
      message.find("it holds 1 history blobs but net 'linear_regression' has 1 learnable "
                   "parameters and the Adam solver keeps 2 history blobs for each (2 in all)"),
      std::string::npos)
      << message;
  EXPECT_EQ(adam->iter(), 0);
}

}  // namespace
}  // namespace xtrain

// The training loop: which nets a solver builds and in which state, when it
// tests and displays, Caffe's log lines, loss smoothing, stop requests and
// the checks on an inconsistent solver.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "solver_test_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

using namespace testing;

// The net given once as net_param: it is the train net and, once per
// test_iter entry, a test net.
SolverParameter generic_solver(const NetParameter& net, const std::string& extra) {
  SolverParameter param = testing::solver_param(net, extra);
  param.clear_train_net_param();
  *param.mutable_net_param() = net;
  return param;
}

std::string creation_error(const SolverParameter& param) {
  try {
    create_solver(param, quiet_solver_options());
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

int count_matches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

XTRAIN_DEVICE_TEST(SolverLoop, LogLinesHaveCaffesShape) {
  // lr 0 keeps w = 1, so every loss is (x^2) / 2 of the row seen.
  auto solver = create_solver(generic_solver(scalar_net(),
                                             "base_lr: 0 max_iter: 4 display: 2 test_iter: 2 "
                                             "test_interval: 2 test_compute_loss: true"),
                              quiet_solver_options());
  const std::string log = solve_and_capture_log(*solver);

  const std::string number = "[-+0-9.eE]+";
  const std::string line_end = "(\n|$)";
  // Tests at 0 and 2 in the loop, and at 4 after it.
  EXPECT_EQ(count_matches(log, "\\] Iteration [024], Testing net \\(#0\\)\n"), 3) << log;
  EXPECT_EQ(count_matches(log, "\\]     Test net output #0: loss = " + number +
                                   " \\(\\* 1 = " + number + " loss\\)" + line_end),
            3)
      << log;
  EXPECT_EQ(count_matches(log, "\\] Test loss: " + number + line_end), 3) << log;
  // Display at 0 and 2, each with its train outputs and learning rate.
  EXPECT_EQ(count_matches(log, "\\] Iteration [02] \\(" + number + " iter/s, " + number +
                                   "s/2 iters\\), loss = " + number + line_end),
            2)
      << log;
  EXPECT_EQ(count_matches(log, "\\]     Train net output #0: loss = " + number +
                                   " \\(\\* 1 = " + number + " loss\\)" + line_end),
            2)
      << log;
  EXPECT_EQ(count_matches(log, "\\] Iteration [02], lr = 0" + line_end), 2) << log;
  // The last display after the loop, then the end.
  EXPECT_EQ(count_matches(log, "\\] Iteration 4, loss = " + number + line_end), 1) << log;
  EXPECT_EQ(count_matches(log, "\\] Optimization Done\\." + line_end), 1) << log;
  // Test at iteration 0 sees rows 1 and 2: losses 0.5 and 2.
  EXPECT_NE(log.find("] Iteration 0, Testing net (#0)\n"), std::string::npos);
  EXPECT_NE(log.find("    Test net output #0: loss = 1.25 (* 1 = 1.25 loss)"), std::string::npos)
      << log;
  EXPECT_NE(log.find("    Train net output #0: loss = 0.5 (* 1 = 0.5 loss)"), std::string::npos)
      << log;
}

XTRAIN_DEVICE_TEST(SolverLoop, TestResultsAreMeansOverTestIterBatches) {
  // w stays 1 (lr 0); the test net's rows continue from test to test:
  // first test rows x = 1, 2 -> (0.5 + 2) / 2; second x = -1, 0.5 ->
  // (0.5 + 0.125) / 2.
  auto solver =
      create_solver(generic_solver(scalar_net(), "base_lr: 0 test_iter: 2 test_interval: 2"),
                    quiet_solver_options());
  ASSERT_EQ(solver->test_nets().size(), 1u);
  solver->step(1);
  ASSERT_EQ(solver->last_test_results().size(), 1u);
  ASSERT_EQ(solver->last_test_results()[0].size(), 1u);
  EXPECT_EQ(solver->last_test_results()[0][0].first, "loss");
  EXPECT_FLOAT_EQ(solver->last_test_results()[0][0].second, 1.25f);
  solver->step(2);  // iterations 1 and 2: tests again at 2
  EXPECT_FLOAT_EQ(solver->last_test_results()[0][0].second, 0.3125f);
}

XTRAIN_DEVICE_TEST(SolverLoop, TestNetsUseTheTrainedWeights) {
  auto solver = create_solver(generic_solver(scalar_net(), "test_iter: 1 test_interval: 1"),
                              quiet_solver_options());
  solver->step(2);  // the first update makes w = 1 - 0.1 * 1 = 0.9
  // The test at iteration 1 ran with w = 0.9 on the test net's second row,
  // x = 2: (0.9 * 2)^2 / 2.
  EXPECT_FLOAT_EQ(solver->last_test_results()[0][0].second, 1.62f);
  const Blob& trained = *solver->net().learnable_params()[0];
  const Blob& tested = *solver->test_nets()[0]->learnable_params()[0];
  EXPECT_EQ(trained.cpu_data(), tested.cpu_data());
}

XTRAIN_DEVICE_TEST(SolverLoop, TestInitializationFalseSkipsTheTestAtZero) {
  auto solver = create_solver(
      generic_solver(scalar_net(), "test_iter: 1 test_interval: 2 test_initialization: false"),
      quiet_solver_options());
  solver->step(1);
  EXPECT_TRUE(solver->last_test_results()[0].empty());
  solver->step(2);
  EXPECT_EQ(solver->last_test_results()[0].size(), 1u);
}

XTRAIN_DEVICE_TEST(SolverLoop, SmoothedLossAveragesTheLastAverageLossIterations) {
  // lr 0: the losses cycle 0.5, 2, 0.5, 0.125 (rows 1, 2, -1, 0.5).
  auto solver = create_solver(testing::solver_param(scalar_net(), "base_lr: 0 average_loss: 3"),
                              quiet_solver_options());
  solver->step(2);
  EXPECT_FLOAT_EQ(solver->smoothed_loss(), 1.25f);  // fewer than 3 yet: (0.5 + 2) / 2
  solver->step(5);  // a new step() starts a new window: iterations 2..6
  // Last three: iterations 4, 5, 6 -> 0.5, 2, 0.5.
  EXPECT_FLOAT_EQ(solver->smoothed_loss(), 1.0f);
}

XTRAIN_DEVICE_TEST(SolverLoop, StopRequestEndsTrainingAfterTheCurrentIteration) {
  auto solver =
      create_solver(testing::solver_param(scalar_net(), "max_iter: 10"), quiet_solver_options());
  int polls = 0;
  solver->set_action_request_function(
      [&polls] { return ++polls == 2 ? Solver::Action::kStop : Solver::Action::kNone; });
  solver->solve();
  EXPECT_EQ(solver->iter(), 2);
  EXPECT_TRUE(solver->requested_early_exit());
}

XTRAIN_DEVICE_TEST(SolverLoop, NetStatesFollowCaffe) {
  // The train net is TRAIN plus train_state; test net i is TEST plus
  // test_state(i); layers are kept by their include rules.
  const std::string rows = " type: 'SolverTestRows' input_param { shape { dim: 1 dim: 1 } } ";
  const std::string extra_layers =
      "layer { name: 'test_only' top: 'test_rows' include { phase: TEST }" + rows +
      "}\n"
      "layer { name: 'stage_a' top: 'a_rows' include { stage: 'a' }" +
      rows +
      "}\n"
      "layer { name: 'stage_b' top: 'b_rows' include { stage: 'b' }" +
      rows + "}\n";
  NetParameter net = scalar_net();
  NetParameter more;
  read_proto_from_text_string(extra_layers, &more);
  net.MergeFrom(more);
  auto solver = create_solver(generic_solver(net,
                                             "test_iter: 1 test_iter: 1 test_interval: 10 "
                                             "train_state { stage: 'b' } "
                                             "test_state { stage: 'a' } test_state { stage: 'b' }"),
                              quiet_solver_options());
  const Net& train = solver->net();
  EXPECT_EQ(train.phase(), TRAIN);
  EXPECT_FALSE(train.has_layer("test_only"));
  EXPECT_FALSE(train.has_layer("stage_a"));
  EXPECT_TRUE(train.has_layer("stage_b"));
  ASSERT_EQ(solver->test_nets().size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const Net& test = *solver->test_nets()[i];
    EXPECT_EQ(test.phase(), TEST);
    EXPECT_TRUE(test.has_layer("test_only"));
    EXPECT_EQ(test.has_layer("stage_a"), i == 0);
    EXPECT_EQ(test.has_layer("stage_b"), i == 1);
  }
}

XTRAIN_DEVICE_TEST(SolverLoop, TestNetsComeFromTestNetParamThenTheGenericNet) {
  SolverParameter param =
      generic_solver(scalar_net(), "test_iter: 1 test_iter: 1 test_interval: 5");
  NetParameter named = scalar_net(2);
  named.set_name("explicit_test_net");
  *param.add_test_net_param() = named;
  auto solver = create_solver(param, quiet_solver_options());
  ASSERT_EQ(solver->test_nets().size(), 2u);
  EXPECT_EQ(solver->test_nets()[0]->name(), "explicit_test_net");
  EXPECT_EQ(solver->test_nets()[1]->name(), "linear_regression");
}

XTRAIN_DEVICE_TEST(SolverLoop, TrainNetFromAFile) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("xtrain_solver_loop_net_" + std::to_string(::getpid()) + ".prototxt");
  write_proto_to_text_file(scalar_net(), path.string());
  SolverParameter param = testing::solver_param(scalar_net(), "");
  param.clear_train_net_param();
  param.set_net(path.string());
  auto solver = create_solver(param, quiet_solver_options());
  solver->step(1);
  EXPECT_FLOAT_EQ(solver->net().learnable_params()[0]->cpu_data()[0], 0.9f);
  std::filesystem::remove(path);

  param.set_net(path.string());  // now missing
  EXPECT_NE(creation_error(param).find(path.string()), std::string::npos);
}

TEST(SolverLoop, RandomSeedMakesInitialWeightsReproducible) {
  const NetParameter net =
      linear_regression_net(1, 2, 3, false, "", "weight_filler { type: 'gaussian' std: 1 }");
  auto weights = [&](const std::string& seed) {
    auto solver = create_solver(testing::solver_param(net, seed), quiet_solver_options());
    const Blob& w = *solver->net().learnable_params()[0];
    return std::vector<float>(w.cpu_data(), w.cpu_data() + w.count());
  };
  EXPECT_EQ(weights("random_seed: 7"), weights("random_seed: 7"));
  EXPECT_NE(weights("random_seed: 7"), weights("random_seed: 8"));
}

TEST(SolverLoop, InconsistentSolversAreErrors) {
  struct Case {
    SolverParameter param;
    std::string expected;
  };
  SolverParameter no_net = testing::solver_param(scalar_net(), "");
  no_net.clear_train_net_param();
  SolverParameter two_nets = testing::solver_param(scalar_net(), "");
  *two_nets.mutable_net_param() = scalar_net();
  SolverParameter missing_test_iter = testing::solver_param(scalar_net(), "test_interval: 5");
  *missing_test_iter.add_test_net_param() = scalar_net();
  SolverParameter extra_test_iter =
      testing::solver_param(scalar_net(), "test_iter: 1 test_interval: 5");
  const Case cases[] = {
      {no_net, "names no train net; set one of: net, net_param, train_net, train_net_param"},
      {two_nets, "keep exactly one of"},
      {missing_test_iter, "give one test_iter per test net"},
      {extra_test_iter, "give one test_iter per test net"},
      {generic_solver(scalar_net(), "test_iter: 1"), "no test_interval"},
      {generic_solver(scalar_net(), "test_iter: 0 test_interval: 5"), "test_iter #0 must be > 0"},
      {generic_solver(scalar_net(),
                      "test_iter: 1 test_interval: 5 test_state { stage: 'a' } "
                      "test_state { stage: 'b' }"),
       "give one test_state per test net"},
      {testing::solver_param(scalar_net(), "iter_size: 0"), "iter_size must be at least 1"},
      {testing::solver_param(scalar_net(), "average_loss: 0"), "average_loss must be at least 1"},
      {testing::solver_param(scalar_net(), "lr_policy: 'step'"), "stepsize"},
      {testing::solver_param(scalar_net(), "clip_gradients: nan"),
       "the solver's clip_gradients is nan, which no setting can be"},
  };
  for (const Case& c : cases) {
    const std::string message = creation_error(c.param);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "expected \"" << c.expected << "\" in: " << message;
  }
}

// Python's solver.step(n) passes the user's number.
TEST(SolverLoop, StepsBelowZeroOrPastTheIterationCounterAreErrors) {
  auto solver =
      create_solver(testing::solver_param(scalar_net(), "max_iter: 4"), quiet_solver_options());
  testing::expect_error([&] { solver->step(-5); }, {"step(-5): give the number of iterations"});
  solver->step(1);
  testing::expect_error([&] { solver->step(std::numeric_limits<int>::max()); },
                        {"from iteration 1 would pass 2147483647"});
  EXPECT_EQ(solver->iter(), 1);
}

XTRAIN_DEVICE_TEST(SolverLoop, NonRootSolversDoNotTest) {
  SolverOptions options = quiet_solver_options();
  options.is_root = false;
  auto solver =
      create_solver(generic_solver(scalar_net(), "test_iter: 1 test_interval: 1"), options);
  EXPECT_TRUE(solver->test_nets().empty());
  solver->step(2);
  EXPECT_EQ(solver->iter(), 2);
}

}  // namespace
}  // namespace xtrain

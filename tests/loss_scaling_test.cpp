// Loss scaling (NetParameter.global_grad_scale, global_grad_scale_adaptive;
// solvers/loss_scaler.hpp): a static scale changes nothing but the gradients'
// range, an adaptive one skips the updates whose 16-bit gradients overflow
// and halves, grows after a run of good updates, survives a snapshot, and
// turns an endless run of non-finite gradients into an error. The checks
// of the solver's settings for mixed precision are here too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "solver_test_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

using testing::error_of;

// The linear regression of solver_test_net.hpp with net fields added. Its
// rows repeat every 2 iterations, so a resume at an even iteration reads
// what a run straight through reads.
NetParameter regression_net(const std::string& net_fields, const std::string& linear_fields = "") {
  NetParameter net = testing::linear_regression_net(
      2, 2, 2, true, linear_fields,
      "weight_filler { type: 'constant' value: 0.5 } bias_filler { type: 'constant' value: 0.25 }");
  NetParameter fields;
  read_proto_from_text_string(net_fields, &fields, "net fields");
  net.MergeFrom(fields);
  return net;
}

std::unique_ptr<Solver> make_solver(const NetParameter& net, const std::string& extra = "") {
  SolverOptions options = testing::quiet_solver_options();
  options.device = Device::cpu();
  return create_solver(testing::solver_param(net, "momentum: 0.9 " + extra), options);
}

std::vector<float> weights_of(const Solver& solver) {
  std::vector<float> values;
  for (const Blob* param : solver.net().learnable_params()) {
    values.insert(values.end(), param->cpu_data(), param->cpu_data() + param->count());
  }
  return values;
}

TEST(LossScaling, AStaticPowerOfTwoScaleTrainsBitForBitAsNone) {
  auto plain = make_solver(regression_net(""));
  auto scaled = make_solver(regression_net("global_grad_scale: 1024"));
  EXPECT_EQ(scaled->loss_scale(), 1024.0f);
  EXPECT_EQ(plain->loss_scale(), 1.0f);
  plain->step(3);
  scaled->step(3);
  EXPECT_EQ(weights_of(*scaled), weights_of(*plain));
  EXPECT_EQ(scaled->loss_scale(), 1024.0f);
  EXPECT_EQ(scaled->skipped_updates(), 0);
}

TEST(LossScaling, ScalesThatCannotScaleAndFp16MasterWeightsAreRefusedNamingTheField) {
  for (const std::string scale : {"0", "-1", "inf"}) {
    const std::string message =
        error_of([&] { make_solver(regression_net("global_grad_scale: " + scale)); });
    EXPECT_NE(message.find("the train net's global_grad_scale is"), std::string::npos) << message;
  }
  const std::string master =
      error_of([] { make_solver(regression_net(""), "solver_data_type: FLOAT16"); });
  EXPECT_NE(master.find("solver_data_type is FLOAT16"), std::string::npos) << master;
  EXPECT_NE(master.find("Set solver_data_type: FLOAT"), std::string::npos) << master;
}

// fp16 gradients of a loss scaled by 65536 overflow (dW is of order 1 here);
// each overflow skips the update and halves the scale until they fit.
TEST(LossScaling, AdaptiveScalingSkipsOverflowedUpdatesAndHalvesTheScale) {
  const NetParameter net = regression_net(
      "global_grad_scale_adaptive: true default_forward_type: FLOAT16 "
      "default_backward_type: FLOAT16");
  auto solver = make_solver(net, "max_iter: 100");
  EXPECT_EQ(solver->loss_scale(), 65536.0f);  // GradScaler's start when none is given
  const std::vector<float> initial = weights_of(*solver);
  solver->step(1);
  EXPECT_EQ(solver->skipped_updates(), 1);
  EXPECT_EQ(solver->loss_scale(), 32768.0f);
  EXPECT_EQ(weights_of(*solver), initial);  // skipped
  EXPECT_EQ(solver->iter(), 1);             // the iteration still counts
  int steps = 1;
  while (solver->skipped_updates() == steps && steps < 20) {
    solver->step(1);
    ++steps;
  }
  const std::int64_t skipped = solver->skipped_updates();
  EXPECT_LT(skipped, steps) << "an update was finally applied";
  EXPECT_NE(weights_of(*solver), initial);
  EXPECT_EQ(solver->loss_scale(), 65536.0f / std::ldexp(1.0f, static_cast<int>(skipped)));
  // The same weights as training from the start with the scale that fits,
  // once the skipped iterations' data has passed.
  const float fitting = solver->loss_scale();
  solver->step(3);
  EXPECT_EQ(solver->skipped_updates(), skipped);
  EXPECT_EQ(solver->loss_scale(), fitting);
}

TEST(LossScaling, AdaptiveScalingDoublesAfterARunOfGoodUpdates) {
  auto solver = make_solver(regression_net("global_grad_scale_adaptive: true global_grad_scale: 2"),
                            "max_iter: 5000 base_lr: 0.001");
  solver->step(1999);
  EXPECT_EQ(solver->loss_scale(), 2.0f);
  solver->step(1);
  EXPECT_EQ(solver->loss_scale(), 4.0f);
  solver->step(2000);
  EXPECT_EQ(solver->loss_scale(), 8.0f);
  EXPECT_EQ(solver->skipped_updates(), 0);
}

TEST(LossScaling, GradientsThatStayNanAreADivergedRunNotAnOverflow) {
  // sqrt of a negative input: nan gradients at every scale.
  testing::register_solver_test_layers();
  NetParameter with_nan;
  read_proto_from_text_string(
      "global_grad_scale_adaptive: true\n"
      "layer { name: 'rows' type: 'SolverTestRows' top: 'x' input_param { shape { dim: 2 dim: 2 "
      "} } }\n"
      "layer { name: 'root' type: 'Power' bottom: 'x' top: 'r' power_param { power: 0.5 } }\n"
      "layer { name: 'linear' type: 'SolverTestLinear' bottom: 'r' top: 'y' inner_product_param { "
      "num_output: 2 bias_term: true weight_filler { type: 'constant' value: 0.5 } } }\n"
      "layer { name: 'loss' type: 'SolverTestHalfSquare' bottom: 'y' top: 'loss' }\n",
      &with_nan, "nan net");
  auto solver = make_solver(with_nan, "max_iter: 100");
  const std::string message = error_of([&] { solver->step(100); });
  EXPECT_NE(message.find("not an overflow of 16-bit gradients but a diverged run"),
            std::string::npos)
      << message;
  EXPECT_EQ(solver->skipped_updates(), 33);  // 2^16 down to 2^-16 and one below
}

TEST(LossScaling, TheAdaptiveScaleIsPartOfTheSnapshotAndResumeIsExact) {
  const fs::path folder =
      fs::temp_directory_path() / ("xtrain_loss_scale_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  const NetParameter net = regression_net(
      "global_grad_scale_adaptive: true default_forward_type: FLOAT16 "
      "default_backward_type: FLOAT16");
  const std::string prefix = (folder / "run").string();
  auto straight = make_solver(net, "max_iter: 30");
  straight->step(30);

  auto first = make_solver(net, "max_iter: 30 snapshot_prefix: '" + prefix + "'");
  first->step(12);
  first->snapshot();
  const float scale_at_snapshot = first->loss_scale();
  const std::int64_t skipped_at_snapshot = first->skipped_updates();
  EXPECT_GT(skipped_at_snapshot, 0);

  auto resumed = make_solver(net, "max_iter: 30 snapshot_prefix: '" + prefix + "'");
  resumed->restore(prefix + "_iter_12.solverstate");
  EXPECT_EQ(resumed->loss_scale(), scale_at_snapshot);
  EXPECT_EQ(resumed->skipped_updates(), skipped_at_snapshot);
  resumed->step(18);
  EXPECT_EQ(weights_of(*resumed), weights_of(*straight));
  EXPECT_EQ(resumed->loss_scale(), straight->loss_scale());
  fs::remove_all(folder);
}

}  // namespace
}  // namespace xtrain

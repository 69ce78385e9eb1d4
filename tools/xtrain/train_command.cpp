// xtrain train: run a solver from its prototxt, optionally resuming from a
// .solverstate (--snapshot) or starting from trained weights (--weights).
#include <chrono>
#include <filesystem>

#include "command.hpp"
#include "flags.hpp"
#include "signal_actions.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::cli {
namespace {
// "snapshots/lenet" needs the directory "snapshots" before the first snapshot.
void make_parent_directories(const std::string& prefix) {
  const auto slash = prefix.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  std::error_code error;
  std::filesystem::create_directories(prefix.substr(0, slash), error);
  XTRAIN_CHECK(!error, "cannot create the snapshot directory for snapshot_prefix '", prefix,
               "': ", error.message());
}
}  // namespace

int train_command() {
  XTRAIN_CHECK(!FLAGS_solver.empty(), "xtrain train needs --solver=SOLVER.prototxt");
  XTRAIN_CHECK(FLAGS_snapshot.empty() || FLAGS_weights.empty(),
               "give --snapshot (resume training) or --weights (fine-tune), not both");
  SolverParameter solver_param = read_solver_params_from_text_file(FLAGS_solver);
  // --level and --stage select the train net's layers, as in Caffe.
  solver_param.mutable_train_state()->set_level(FLAGS_level);
  for (const std::string& stage : split_commas(FLAGS_stage)) {
    solver_param.mutable_train_state()->add_stage(stage);
  }
  if (FLAGS_max_iter >= 0) solver_param.set_max_iter(FLAGS_max_iter);
  fill_default_snapshot_prefix(&solver_param, FLAGS_solver);
  make_parent_directories(solver_param.snapshot_prefix());
  const Device device = choose_device(FLAGS_gpu, solver_param.solver_mode() == SolverParameter::GPU,
                                      static_cast<int>(solver_param.device_id()));
  if (device.is_gpu()) {
    solver_param.set_solver_mode(SolverParameter::GPU);
    solver_param.set_device_id(device.id);
  } else {
    solver_param.set_solver_mode(SolverParameter::CPU);
  }
  XLOG(INFO) << "Use " << device.to_string() << ".";
  SignalActions signals(parse_signal_effect("sigint_effect", FLAGS_sigint_effect),
                        parse_signal_effect("sighup_effect", FLAGS_sighup_effect));

  std::unique_ptr<Solver> solver = create_solver(solver_param);
  solver->set_action_request_function([&signals] { return signals.poll(); });
  for (const std::string& weights : split_commas(FLAGS_weights)) {
    solver->net().copy_trained_layers_from(weights);
  }
  const auto start = std::chrono::steady_clock::now();
  XLOG(INFO) << "Starting Optimization";
  solver->solve(FLAGS_snapshot);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  XLOG(INFO) << "Training took " << seconds << " s for " << solver->iter() << " iterations";
  // The user wants the trained net's score: test now unless the solver just did.
  if (!solver->test_nets().empty() && solver->last_test_iter() != solver->iter() &&
      !solver->requested_early_exit()) {
    solver->test_all();
  }
  const auto& results = solver->last_test_results();
  for (std::size_t net_id = 0; net_id < results.size(); ++net_id) {
    for (const auto& [name, value] : results[net_id]) {
      XLOG(INFO) << "Final test net #" << net_id << " (iteration " << solver->last_test_iter()
                 << "): " << name << " = " << value;
    }
  }
  for (const std::string& path : solver->last_snapshot_paths()) {
    XLOG(INFO) << "Snapshot: " << path;
  }
  return 0;
}

}  // namespace xtrain::cli

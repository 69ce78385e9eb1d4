// xtrain time --training_step: whole training iterations as `xtrain train`
// runs them (forward, backward and a momentum-SGD update with weight decay)
// timed through the solver, to compare with benchmarks that include the
// optimizer's step, and the peak memory of training with its momentum.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "command.hpp"
#include "flags.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/solver.hpp"

namespace xtrain::cli {

int time_training_steps() {
  SolverParameter param;
  *param.mutable_net_param() = read_net_params_from_text_file(FLAGS_model);
  param.set_type("SGD");
  // A small step: the benchmark's inputs are constant, and the point is the
  // time of the update, not where it leads.
  param.set_base_lr(0.001f);
  param.set_lr_policy("fixed");
  param.set_momentum(0.9f);
  param.set_weight_decay(0.0005f);
  param.set_max_iter(FLAGS_iterations + 1);
  param.set_display(0);
  param.set_snapshot(0);
  param.set_snapshot_after_train(false);

  SolverOptions options;
  options.device = choose_device(FLAGS_gpu, false, 0);
  options.share_activation_memory = FLAGS_share_activation_memory;
  options.channel_blocked_activations = FLAGS_channel_blocked_activations;
  options.share_kept_copies = FLAGS_share_kept_copies;
  options.fuse_layers = FLAGS_fuse_layers;
  options.precision = precision_flag();
  std::unique_ptr<Solver> solver = create_solver(param, options);
  solver->step(1);  // warm-up: kernels chosen, buffers and momentum allocated
  log_memory_breakdown(solver->net(), solver->history_bytes());

  const auto start = std::chrono::steady_clock::now();
  solver->step(FLAGS_iterations);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      FLAGS_iterations;
  XLOG(INFO) << "Average training iteration (forward, backward, SGD update): " << ms << " ms.";

  const Net& net = solver->net();
  int batch = 0;
  if (!net.blobs().empty() && net.blobs().front()->num_axes() > 0) {
    batch = net.blobs().front()->shape(0);
  }
  std::printf("training iteration (forward, backward, SGD update) %.3f ms", ms);
  if (batch > 0) std::printf(" (batch %d: %.0f images/s)", batch, batch * 1000.0 / ms);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("\npeak resident memory %.1f MiB\n", usage.ru_maxrss / 1024.0);
  return 0;
}

}  // namespace xtrain::cli

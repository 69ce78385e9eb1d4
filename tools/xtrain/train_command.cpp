// xtrain train: run a solver from its prototxt, optionally resuming from a
// .solverstate (--snapshot) or starting from trained weights (--weights).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>

#include "command.hpp"
#include "flags.hpp"
#include "resume_batch_check.hpp"
#include "signal_actions.hpp"
#include "snapshot_lock.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/solver.hpp"
#include "xtrain/tensorboard.hpp"
#include "xtrain/training_report.hpp"

DEFINE_string(metrics, "",
              "train: the file to append a JSON line of metrics to at every display and test "
              "(default <snapshot_prefix>_metrics.jsonl; 'none': no file). The HTML report "
              "<snapshot_prefix>_report.html is written beside the snapshots either way");
DEFINE_string(tensorboard, "",
              "train: the directory to write TensorBoard event files to (created if missing): "
              "loss, outputs, learning rate, throughput, loss scale and per-parameter weight "
              "and gradient norms at every display, test outputs, weight histograms at every "
              "snapshot; view with `tensorboard --logdir DIR`. Default: none");

DEFINE_string(rendezvous, "",
              "train: a directory every rank sees (NFS; any local one for ranks on one host) "
              "where the processes of a job meet, without MPI: they sum over Gloo's TCP "
              "transport. Rank and size from --rank and --world_size, else srun's or torchrun's "
              "variables");
DEFINE_int32(rank, -1, "train with --rendezvous: this process's rank, 0 .. --world_size - 1");
DEFINE_int32(world_size, -1, "train with --rendezvous: the number of processes in the job");

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

// --snapshot=auto: the newest intact snapshot, or "" to start fresh.
std::string choose_auto_resume(const std::string& prefix) {
  std::vector<std::string> skipped;
  const std::string chosen = find_latest_valid_snapshot(prefix, &skipped);
  for (const std::string& reason : skipped) {
    XLOG(WARNING) << "--snapshot=auto skips " << reason;
  }
  if (chosen.empty()) {
    XLOG(INFO) << "--snapshot=auto: no usable snapshot with prefix '" << prefix
               << "'; starting a new training";
  } else {
    XLOG(INFO) << "--snapshot=auto: resuming from " << chosen;
  }
  return chosen;
}

// -1 (the default) leaves the solver's value; any other value below 0, or
// nan, is a mistake (it was taken for -1 without a word).
void check_override(const char* flag, double value, const char* meaning) {
  XTRAIN_CHECK(value == -1 || value >= 0, "--", flag, "=", value, ": give ", meaning,
               ", or leave it out (-1) for the solver's");
}

// Flags override the solver's settings of the same name.
void apply_flag_overrides(SolverParameter* param) {
  check_override("max_iter", FLAGS_max_iter, "the iterations to train (>= 0)");
  check_override("max_seconds", FLAGS_max_seconds, "seconds >= 0 (0: no time budget)");
  check_override("snapshot_keep", FLAGS_snapshot_keep, "how many snapshots to keep (0: all)");
  check_override("snapshot_minutes", FLAGS_snapshot_minutes, "minutes >= 0 (0: off)");
  XTRAIN_CHECK(FLAGS_iter_size == -1 || FLAGS_iter_size >= 1, "--iter_size=", FLAGS_iter_size,
               ": give the batches accumulated per update (>= 1), or leave it out (-1) for the "
               "solver's");
  if (FLAGS_max_iter >= 0) param->set_max_iter(FLAGS_max_iter);
  if (FLAGS_iter_size >= 1) param->set_iter_size(FLAGS_iter_size);
  if (FLAGS_max_seconds >= 0) param->set_max_seconds(static_cast<float>(FLAGS_max_seconds));
  if (FLAGS_snapshot_keep >= 0) param->set_snapshot_keep(FLAGS_snapshot_keep);
  if (FLAGS_snapshot_minutes >= 0) {
    param->set_snapshot_minutes(static_cast<float>(FLAGS_snapshot_minutes));
  }
}

// The job's communicators: the host one (MPI, or the single-process one)
// and, for GPU ranks, the one that moves gradients on the GPUs (NCCL).
struct JobCommunicators {
  std::unique_ptr<Communicator> host;
  std::unique_ptr<Communicator> gradients;  // null: host
};

// Joins the job the launcher's environment describes (a lone process when
// there is none), on `device`: a GPU rank's own GPU, already chosen and
// selected by choose_devices. The ranks other than the root log warnings only.
JobCommunicators join_process_group(const ProcessGroup& group, const Device& device) {
  JobCommunicators job;
  if (group.size > 1) {
    XTRAIN_CHECK(FLAGS_collective_timeout > 0, "--collective_timeout must be positive, got ",
                 FLAGS_collective_timeout);
  }
  job.host = make_communicator(group, group.size > 1 ? FLAGS_collective_timeout : 1.0);
  if (group.size > 1 && device.is_gpu()) {
    job.gradients = make_gpu_communicator(*job.host, device.id, FLAGS_collective_timeout);
  }
  if (group.rank != 0) set_min_log_severity(LogSeverity::kWarning);
  return job;
}

// `replica`: what one replica is, "rank" or "GPU".
void log_data_parallel_batches(const Communicator& communicator, const Solver& solver,
                               const SolverParameter& param, const std::string& replica) {
  const auto& blobs = solver.net().blobs();
  const int batch = !blobs.empty() && blobs.front()->num_axes() > 0 ? blobs.front()->shape(0) : 0;
  const int size = communicator.size();
  XLOG(INFO) << "Data parallel: " << size << " " << replica << "s (" << communicator.backend()
             << ", --collective_timeout=" << FLAGS_collective_timeout << " s); batch " << batch
             << " per " << replica << " x " << size << " " << replica << "s x iter_size "
             << param.iter_size() << " = " << batch * size * param.iter_size()
             << " images per update; base_lr " << param.base_lr()
             << " (applied to the gradient averaged over the " << replica << "s)";
}

// What every replica of one training shares.
struct TrainingRun {
  SolverParameter param;
  std::string resume_file;
  std::chrono::steady_clock::time_point session_start;
  SignalActions* signals = nullptr;  // polled by the root only
};

// Builds this replica's solver, trains it, and (the root) reports the
// outcome; returns the exit code.
int train_replica(const TrainingRun& run, SolverOptions options, const std::string& replica) {
  options.session_start = run.session_start;
  XTRAIN_CHECK(FLAGS_gradient_bucket_mb > 0, "--gradient_bucket_mb must be positive, got ",
               FLAGS_gradient_bucket_mb);
  options.gradient_bucket_bytes =
      static_cast<std::size_t>(std::max(1.0, FLAGS_gradient_bucket_mb * 1024 * 1024));
  options.share_activation_memory = FLAGS_share_activation_memory;
  options.channel_blocked_activations = FLAGS_channel_blocked_activations;
  options.share_kept_copies = FLAGS_share_kept_copies;
  options.fuse_layers = FLAGS_fuse_layers;
  options.precision = precision_flag();
  std::unique_ptr<Solver> solver = create_solver(run.param, options);
  const bool root = solver->options().is_root;
  // The root keeps the record (only the root solver sends events).
  const std::string& prefix = run.param.snapshot_prefix();
  const std::string report_path = prefix + "_report.html";
  solver->add_observer(make_training_recorder(FLAGS_metrics == "none" ? std::string()
                                              : FLAGS_metrics.empty() ? prefix + "_metrics.jsonl"
                                                                      : FLAGS_metrics,
                                              report_path));
  if (root && !FLAGS_tensorboard.empty()) {
    solver->add_observer(make_tensorboard_recorder(FLAGS_tensorboard, *solver));
  }
  if (root && options.communicator != nullptr && options.communicator->size() > 1) {
    const Communicator& exchange =
        options.gradient_communicator ? *options.gradient_communicator : *options.communicator;
    log_data_parallel_batches(exchange, *solver, run.param, replica);
  }
  // The root hears the signals; the replicas agree on its requests.
  if (root) solver->set_action_request_function([&run] { return run.signals->poll(); });
  if (run.resume_file.empty()) {
    copy_weights(solver->net(), FLAGS_weights, /*scoring=*/false);
  } else {
    const int replicas = options.communicator != nullptr ? options.communicator->size() : 1;
    check_resume_keeps_the_batch(run.resume_file, solver->net(), replicas, run.param.iter_size(),
                                 replica);
  }
  const auto start = std::chrono::steady_clock::now();
  XLOG(INFO) << "Starting Optimization";
  solver->solve(run.resume_file);
  if (!root) return 0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  XLOG(INFO) << "Training took " << seconds << " s for "
             << solver->iter() - solver->solve_start_iter() << " iterations (from "
             << solver->solve_start_iter() << " to " << solver->iter() << ")";
  XLOG(INFO) << "Training report: " << report_path;
  if (solver->requested_early_exit()) {
    for (const std::string& path : solver->last_snapshot_paths()) {
      XLOG(INFO) << "Snapshot: " << path;
    }
    const std::string why =
        solver->stopped_for_time_budget() ? std::string("the time budget (max_seconds)")
        : run.signals->stop_signal() != 0 ? std::string(strsignal(run.signals->stop_signal()))
                                          : std::string("a stop request");
    if (solver->last_snapshot_iter() == solver->iter()) {
      XLOG(INFO) << "Stopped early at iteration " << solver->iter() << " (" << why
                 << ") with a snapshot; run the same command with --snapshot=auto to continue "
                    "(exit code "
                 << kExitResubmit << ")";
      return kExitResubmit;
    }
    throw Error("stopped early at iteration " + std::to_string(solver->iter()) + " (" + why +
                ") without a snapshot of it (snapshot_after_train is false, or the snapshot "
                "failed: see the log); the newest snapshot is from iteration " +
                std::to_string(solver->last_snapshot_iter()));
  }
  // The user wants the trained net's score: test now unless the solver just did.
  if (!solver->test_nets().empty() && solver->last_test_iter() != solver->iter()) {
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

// One process, several GPUs: a replica per GPU, each on a thread of its own
// (the root on this one), the gradients summed with NCCL, bootstrapped and
// the stop agreements made over the threads' host communicator.
int train_on_several_gpus(const TrainingRun& run, const std::vector<Device>& gpus) {
  XTRAIN_CHECK(FLAGS_collective_timeout > 0, "--collective_timeout must be positive, got ",
               FLAGS_collective_timeout);
  ThreadReplicas replicas(static_cast<int>(gpus.size()), FLAGS_collective_timeout);
  int exit_code = 0;
  replicas.run([&](int rank) {
    const Device gpu = gpus[static_cast<std::size_t>(rank)];
    if (rank != 0) set_min_log_severity_of_this_thread(LogSeverity::kWarning);
    use_device(gpu);
    Communicator& host = replicas.communicator(rank);
    const std::unique_ptr<Communicator> gradients =
        make_gpu_communicator(host, gpu.id, FLAGS_collective_timeout);
    TrainingRun replica_run = run;
    replica_run.param.set_device_id(gpu.id);
    SolverOptions options;
    options.device = gpu;
    options.communicator = &host;
    options.gradient_communicator = gradients.get();
    const int code = train_replica(replica_run, options, "GPU");
    if (rank == 0) exit_code = code;
  });
  return exit_code;
}

}  // namespace

int train_command() {
  const auto session_start = std::chrono::steady_clock::now();
  XTRAIN_CHECK(!FLAGS_solver.empty(), "xtrain train needs --solver=SOLVER.prototxt");
  configure_compute();
  const bool auto_resume = FLAGS_snapshot == "auto";
  // With auto, --weights is the starting point of a fresh run, unused once
  // a snapshot exists: the same fine-tuning job script can be resubmitted.
  XTRAIN_CHECK(FLAGS_snapshot.empty() || auto_resume || FLAGS_weights.empty(),
               "give --snapshot (resume training) or --weights (fine-tune), not both "
               "(--snapshot=auto may go with --weights)");
  SolverParameter solver_param = read_solver_params_from_text_file(FLAGS_solver);
  // --level and --stage select the train net's layers, as in Caffe.
  solver_param.mutable_train_state()->set_level(FLAGS_level);
  for (const std::string& stage : split_commas(FLAGS_stage)) {
    solver_param.mutable_train_state()->add_stage(stage);
  }
  apply_flag_overrides(&solver_param);
  XTRAIN_CHECK(solver_param.has_max_iter(), "the solver '", FLAGS_solver,
               "' has no max_iter, so it would train 0 iterations; set max_iter (the "
               "iterations to train) or give --max_iter");
  fill_default_snapshot_prefix(&solver_param, FLAGS_solver);
  make_parent_directories(solver_param.snapshot_prefix());
  // The launcher's environment first: a GPU rank must touch no GPU but its own.
  XTRAIN_CHECK(!FLAGS_rendezvous.empty() || (FLAGS_rank == -1 && FLAGS_world_size == -1),
               "--rank and --world_size place the process in a job that meets in a shared "
               "directory: give --rendezvous=DIR too (mpirun and srun place their processes "
               "themselves)");
  const ProcessGroup group =
      FLAGS_rendezvous.empty()
          ? process_group_from_environment()
          : process_group_for_rendezvous(FLAGS_rendezvous, FLAGS_rank, FLAGS_world_size);
  const std::vector<Device> devices =
      choose_devices(FLAGS_gpu, solver_param.solver_mode() == SolverParameter::GPU,
                     static_cast<int>(solver_param.device_id()), &group);
  const Device device = devices.front();
  // Several processes (mpirun, srun): one replica each, gradients averaged.
  // Declared before the solver, which uses them until the end.
  const JobCommunicators job =
      devices.size() > 1 ? JobCommunicators{} : join_process_group(group, device);
  try {
    if (device.is_gpu()) {
      solver_param.set_solver_mode(SolverParameter::GPU);
      solver_param.set_device_id(device.id);
    } else {
      solver_param.set_solver_mode(SolverParameter::CPU);
    }
    std::string use = "Use " + device.to_string();
    for (std::size_t i = 1; i < devices.size(); ++i) use += ", " + devices[i].to_string();
    XLOG(INFO) << use << ".";
    // The root writes the snapshots: it holds the prefix's lock until the end.
    std::optional<SnapshotLock> lock;
    if (group.rank == 0) lock.emplace(solver_param.snapshot_prefix());
    const std::string resume_file =
        auto_resume ? choose_auto_resume(solver_param.snapshot_prefix()) : FLAGS_snapshot;
    // Over a file-size limit (ulimit -f) a write should fail with EFBIG, which
    // the snapshot code reports and survives, not kill the process.
    std::signal(SIGXFSZ, SIG_IGN);
    SignalActions signals({{SIGINT, parse_signal_effect("sigint_effect", FLAGS_sigint_effect)},
                           {SIGHUP, parse_signal_effect("sighup_effect", FLAGS_sighup_effect)},
                           {SIGTERM, parse_signal_effect("sigterm_effect", FLAGS_sigterm_effect)},
                           {SIGUSR1, parse_signal_effect("sigusr1_effect", FLAGS_sigusr1_effect)}});
    const TrainingRun run{solver_param, resume_file, session_start, &signals};
    if (devices.size() > 1) return train_on_several_gpus(run, devices);

    SolverOptions options;
    options.communicator = job.host.get();
    options.gradient_communicator = job.gradients.get();
    return train_replica(run, options, "rank");
  } catch (...) {
    // The other ranks would wait out --collective_timeout for this one in
    // their next exchange: end the whole job at once (main prints the error
    // first, then MPI_Abort runs at exit).
    if (group.size > 1) abort_job_at_exit();
    throw;
  }
}

}  // namespace xtrain::cli

// Solver: trains a net by repeated gradient steps, tests it now and then,
// and saves snapshots that training can resume from. Caffe 1.0 semantics:
//
//   each iteration:  clear the gradients
//                    test (every test_interval, and at 0 if test_initialization)
//                    iteration-start callbacks (e.g. pycaffe's on_start)
//                    loss = mean over iter_size of forward_backward()
//                    display (every `display` iterations, Caffe's log lines)
//                    gradients-ready callbacks (data-parallel all-reduce)
//                    apply_update()               (the subclass's rule)
//                    ++iter
//                    snapshot (every `snapshot` iterations, or on request)
//
// Snapshots are <snapshot_prefix>_iter_<N>.caffemodel (the weights) and
// <snapshot_prefix>_iter_<N>.solverstate (iteration, schedule position, the
// update rule's history and the path of the .caffemodel, as in Caffe, plus
// what an exact resume needs: every random stream and data-reader position).
// They are written every `snapshot` iterations, every snapshot_minutes, on
// request, before the max_seconds budget runs out, and at the end; each
// file appears atomically and carries a checksum (xtrain/snapshot_files.hpp).
//
// An empty snapshot_prefix is used as is, as Caffe 1.0 does (files named
// "_iter_<N>.caffemodel" in the working directory); tools that read a solver
// file should call fill_default_snapshot_prefix() first, which names the
// snapshots after the solver file as later Caffe versions do.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/communicator.hpp"
#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/net.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/training_observer.hpp"

namespace xtrain {

struct XTRAIN_API SolverOptions {
  // Where the nets compute. Unset: the solver's solver_mode/device_id if
  // solver_mode is given explicitly (as the tool sets it), else the CPU.
  std::optional<Device> device;
  // When the session's time budget (max_seconds) started; unset: when the
  // solver was constructed. Tools pass their own start time.
  std::optional<std::chrono::steady_clock::time_point> session_start;
  // In a data-parallel group only the root solver builds test nets, tests,
  // displays progress and writes snapshots; the others just compute.
  bool is_root = true;
  // Print each net's layers and blobs as it is built.
  bool verbose_nets = true;
  // NetOptions::share_activation_memory for the train and test nets (their
  // outputs, which the solver reads, keep their own storage).
  bool share_activation_memory = false;
  // NetOptions::channel_blocked_activations for the train and test nets.
  bool channel_blocked_activations = true;
  // NetOptions::share_kept_copies for the train and test nets.
  bool share_kept_copies = true;
  // NetOptions::fuse_layers for the train and test nets.
  bool fuse_layers = true;
  // The data-parallel group this solver is one replica of (not owned; null
  // or a group of one: training alone). Each replica trains on its shard of
  // every global batch (NetOptions::data_shard), the gradients are averaged
  // over the group before every update, all start from the root's seed and
  // weights, and only the root (rank 0) tests, displays and snapshots, so N
  // replicas with batch B train like one solver with batch N * B. Stop
  // requests and the time budget are agreed on after every update.
  Communicator* communicator = nullptr;
  // What moves the weights and gradients, when not `communicator` (null): for
  // GPU replicas a communicator that works on device memory (NCCL), so they
  // never leave the GPU. `communicator` still carries the small host-side
  // agreements (seed, stop requests).
  Communicator* gradient_communicator = nullptr;
  // Data-parallel replicas sum the gradients in buckets of about this many
  // bytes, each started as soon as backward has finished it, so that the
  // exchange overlaps backward (the first bucket is at most 1 MiB).
  std::size_t gradient_bucket_bytes = 25u << 20;
  // Mixed precision for the whole run (NetOptions::precision, `--precision`),
  // for the train and test nets; unset: the nets' fields decide.
  std::optional<NumberType> precision;
};

class GradientBuckets;  // src/solvers/gradient_buckets.hpp
class LossScaler;       // src/solvers/loss_scaler.hpp
class TimeBudget;       // src/solvers/time_budget.hpp

class XTRAIN_API Solver {
 public:
  enum class Action { kNone, kStop, kSnapshot };
  using Callback = std::function<void(Solver&)>;
  using ActionRequest = std::function<Action()>;
  // One test net's averaged outputs: (output blob name, value), one entry per
  // element of each output blob, in the order Caffe prints them.
  using TestResults = std::vector<std::pair<std::string, float>>;

  // Builds the train net and (on the root) the test nets; throws
  // xtrain::Error for an inconsistent solver (see solver.cpp for the checks).
  explicit Solver(const SolverParameter& param, const SolverOptions& options = {});
  virtual ~Solver();
  Solver(const Solver&) = delete;
  Solver& operator=(const Solver&) = delete;

  // Restores from `resume_file` if given, steps until max_iter, snapshots
  // (snapshot_after_train), then displays and tests a last time.
  void solve(const std::string& resume_file = "");
  // Runs `iters` iterations (fewer if a stop is requested).
  void step(int iters);
  // Resumes from a .solverstate (or .solverstate.h5) written for this net by
  // xtrain or Caffe: weights, iteration, history, and (xtrain's) random
  // streams and data positions. Call before training starts (data layers
  // cannot move once they read). Throws xtrain::Error, changing nothing, if
  // the file is not a usable state for this net.
  void restore(const std::string& solverstate_path);
  // Writes the .caffemodel and .solverstate for the current iteration and
  // returns the paths written: both, or none if writing failed (the error
  // is logged and earlier snapshots stay intact, so a long run survives a
  // full disk).
  std::vector<std::string> snapshot();
  // The iteration of the last complete snapshot written or restored (-1: none).
  int last_snapshot_iter() const { return last_snapshot_iter_; }
  // Whether training stopped early to stay inside max_seconds.
  bool stopped_for_time_budget() const { return stopped_for_time_budget_; }
  // What the most recent snapshot() wrote (empty before any).
  const std::vector<std::string>& last_snapshot_paths() const { return last_snapshot_paths_; }
  void test_all();
  void test(int test_net_id);

  int iter() const { return iter_; }
  // The iteration the last solve() started from (after restoring).
  int solve_start_iter() const { return solve_start_iter_; }
  int current_step() const { return current_step_; }
  float smoothed_loss() const { return smoothed_loss_; }
  Net& net() { return *net_; }
  const Net& net() const { return *net_; }
  const std::vector<std::shared_ptr<Net>>& test_nets() const { return test_nets_; }
  const SolverParameter& param() const { return param_; }
  const SolverOptions& options() const { return options_; }
  // The device the nets compute on.
  const Device& device() const { return device_; }
  // Whether the action request function asked to stop.
  bool requested_early_exit() const { return requested_early_exit_; }

  // Called once per iteration before its forward passes (after the test that
  // may come first), with iter() the iteration about to run: the place to
  // feed an input or record a time, as pycaffe's add_callback(on_start, ...).
  void add_iteration_start_callback(Callback callback);
  // Called once per iteration after all iter_size backward passes and before
  // the update; may read and change the learnable parameters' diffs.
  void add_gradients_ready_callback(Callback callback);
  // Adds an observer of training (xtrain/training_observer.hpp): it hears of
  // every display, test and snapshot, and the start and end of solve(). The
  // root solver starts with one, the log's progress lines; the tools add
  // the metrics file and the report (xtrain/training_report.hpp).
  void add_observer(std::shared_ptr<TrainingObserver> observer);
  // Polled once per iteration (and per test batch): kSnapshot snapshots,
  // kStop ends training after the current iteration.
  void set_action_request_function(ActionRequest request);

  // The outputs of the last test of each test net (empty before any test).
  const std::vector<TestResults>& last_test_results() const { return last_test_results_; }
  // The iteration of the last completed test (-1 before any).
  int last_test_iter() const { return last_test_iter_; }

  // Loss scaling (the train net's global_grad_scale and
  // global_grad_scale_adaptive; xtrain/precision.hpp): the scale the next
  // backward pass uses (1: none), and how many updates adaptive scaling has
  // skipped for gradients that overflowed.
  float loss_scale() const;
  std::int64_t skipped_updates() const;

  virtual const char* type() const = 0;
  // Host bytes of the update rule's state (SGD's momentum, Adam's moments,
  // ...), allocated by the first step; for memory counts such as `xtrain
  // time`'s.
  virtual std::size_t history_bytes() const { return 0; }

 protected:
  // Turns the gradients in the learnable params' diffs into an update and
  // applies it (data -= diff).
  virtual void apply_update() = 0;
  // The update rule's state in a .solverstate.
  virtual void write_history(SolverState* state) const = 0;
  // Throws xtrain::Error (naming `path`) if `state` does not fit this net;
  // changes nothing.
  virtual void check_history(const SolverState& state, const std::string& path) const = 0;
  virtual void read_history(const SolverState& state) = 0;

  // Whether this iteration displays progress.
  bool display_now() const;

  SolverParameter param_;
  SolverOptions options_;
  int iter_ = 0;
  int solve_start_iter_ = 0;
  int current_step_ = 0;

 private:
  void init_train_net();
  void init_test_nets();
  void update_smoothed_loss(float loss, int start_iter);
  // The display's event for the observers (solvers/solver_events.cpp).
  void publish_display(bool show_data_wait);
  void publish_final_loss();
  float display_learning_rate() const;
  // Training time over all sessions of the run.
  double training_seconds() const;
  Action requested_action() const;
  std::string snapshot_filename(const std::string& extension) const;
  void check_snapshot_settings() const;
  void fill_resume_state(ResumeState* resume) const;
  void restore_resume_state(const ResumeState& resume, const std::string& path);
  bool timed_snapshot_due() const;
  bool test_due() const;

  // Data-parallel replicas (solvers/data_parallel.cpp).
  bool data_parallel() const;
  Communicator& gradient_communicator() const;
  void agree_on_seed();
  void broadcast_parameters();
  // Runs iter_size forward/backward passes and returns their mean loss. In
  // data-parallel training the gradients (and the loss) are averaged over
  // the replicas, the sums overlapping the last backward pass.
  float compute_gradients();
  // Every replica stops (or snapshots) when any asks to.
  Action agree_on_action(Action request, bool* time_budget_spent);
  // The mean of `value` over the replicas (itself when training alone).
  float mean_over_replicas(float value) const;
  std::unique_ptr<GradientBuckets> gradient_buckets_;  // data-parallel only
  // With loss scaling: divides the gradients by the scale backward used and
  // says whether to apply the update (adaptive scaling skips one whose
  // gradients overflowed), moving the scale for the next iteration.
  bool unscale_gradients();
  std::unique_ptr<LossScaler> loss_scaler_;

  // The run's seed (random_seed, or one from the clock); each net's streams
  // derive from it.
  std::uint64_t seed_ = 0;
  Device device_;
  std::vector<std::string> last_snapshot_paths_;
  int last_snapshot_iter_ = -1;
  bool stopped_for_time_budget_ = false;
  std::chrono::steady_clock::time_point session_start_;
  std::chrono::steady_clock::time_point last_snapshot_time_;
  double train_seconds_before_ = 0;  // earlier sessions' training time
  std::shared_ptr<Net> net_;
  std::vector<std::shared_ptr<Net>> test_nets_;
  std::vector<Callback> iteration_start_callbacks_;
  std::vector<Callback> gradients_ready_callbacks_;
  ActionRequest action_request_;
  std::vector<TestResults> last_test_results_;
  int last_test_iter_ = -1;
  bool requested_early_exit_ = false;

  // Loss smoothing over the last average_loss iterations.
  std::vector<float> losses_;
  float smoothed_loss_ = 0;

  // Iteration speed for the display line.
  std::chrono::steady_clock::time_point display_timer_;
  int iterations_at_last_display_ = 0;

  std::vector<std::shared_ptr<TrainingObserver>> observers_;
  std::shared_ptr<TimeBudget> time_budget_;
};

// Creates the solver named by param.type (or the legacy solver_type enum).
// Throws xtrain::Error for a type that is not available, listing the known.
XTRAIN_API std::unique_ptr<Solver> create_solver(const SolverParameter& param,
                                                 const SolverOptions& options = {});

// The solver type names create_solver() accepts.
XTRAIN_API std::vector<std::string> solver_types();

// Names snapshots after the solver file, as Caffe after 1.0 does: an empty
// snapshot_prefix becomes the solver file's path without its extension, and a
// prefix that is a directory (or ends in '/') gets the file's stem appended.
XTRAIN_API void fill_default_snapshot_prefix(SolverParameter* param,
                                             const std::string& solver_file);

}  // namespace xtrain

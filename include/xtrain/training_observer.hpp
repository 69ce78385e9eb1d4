// What a Solver tells those who watch it train. The solver runs the
// optimisation loop, tests and snapshots; everything that only reports on
// training — Caffe's log lines and xtrain's progress line, the metrics file,
// the HTML report — is an observer of these events, added with
// Solver::add_observer, so each can be written, tested and left out alone.
//
// Events come from the root solver of a data-parallel group only, on the
// training thread, in this order:
//
//   on_start                  solve() begins (after a resume, if any)
//   on_display, on_test, on_snapshot   as training reaches them
//   on_display (final_pass)   the loss of the final weights, if displayed
//   on_end                    solve() ends, normally or early
//
// step() alone (as pycaffe's solver.step does) sends on_display, on_test and
// on_snapshot, without on_start and on_end.
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

// One element of a net output blob: its blob name, value, and the weight it
// has in the loss (0 for a score such as accuracy).
struct XTRAIN_API NetOutputValue {
  std::string name;
  float value = 0;
  float loss_weight = 0;
};

struct XTRAIN_API TrainingStart {
  int iteration = 0;  // where this session starts
  int max_iter = 0;
  bool resumed = false;  // from a .solverstate
  double seconds = 0;    // training time of the earlier sessions
  std::string net_name;
  std::string device;       // "CPU", "GPU 0", ...
  std::string solver_text;  // the SolverParameter as text
  std::string snapshot_prefix;
  // What the train net computes in (xtrain/precision.hpp): "fp32", "bf16",
  // or e.g. "fp16 (3 of 20 layers fp32)"; with the loss scale when one is
  // used: "fp16, loss scale 65536 (adaptive)".
  std::string precision;
};

struct XTRAIN_API TrainingDisplay {
  int iteration = 0;
  int max_iter = 0;
  int display_interval = 0;  // the solver's `display`
  float smoothed_loss = 0;   // mean of the last average_loss iterations
  // The display after the last iteration, from one more forward pass of the
  // final weights: only the loss and outputs are known.
  bool final_pass = false;
  double iterations_per_second = 0;  // since the previous display
  double seconds_since_display = 0;
  double images_per_second = -1;        // < 0: unknown (no iteration timed yet)
  double learning_rate = 0;             // the rate of this iteration's update
  double data_wait_share = -1;          // < 0: the net has no data layer to wait on
  double seconds = 0;                   // training time over all sessions
  std::vector<NetOutputValue> outputs;  // the train net's, in Caffe's order
  // Loss scaling (xtrain/precision.hpp): the scale the next backward pass
  // uses, 1 when none, and the updates adaptive scaling has skipped so far.
  double loss_scale = 1;
  long long skipped_updates = 0;
};

struct XTRAIN_API TestDone {
  int iteration = 0;
  int test_net = 0;
  bool has_loss = false;                // test_compute_loss
  float loss = 0;                       // the mean of the test net's loss over its batches
  double seconds = 0;                   // training time over all sessions
  double test_seconds = 0;              // how long this test took
  std::vector<NetOutputValue> outputs;  // means over test_iter batches
};

struct XTRAIN_API SnapshotWritten {
  int iteration = 0;
  std::vector<std::string> paths;  // the .caffemodel and the .solverstate
  double write_seconds = 0;
};

struct XTRAIN_API TrainingEnd {
  int iteration = 0;
  bool stopped_early = false;  // a stop request or the time budget
  double seconds = 0;          // training time over all sessions
};

class XTRAIN_API TrainingObserver {
 public:
  virtual ~TrainingObserver();
  virtual void on_start(const TrainingStart& /*event*/) {}
  virtual void on_display(const TrainingDisplay& /*event*/) {}
  virtual void on_test(const TestDone& /*event*/) {}
  virtual void on_snapshot(const SnapshotWritten& /*event*/) {}
  virtual void on_end(const TrainingEnd& /*event*/) {}
};

}  // namespace xtrain

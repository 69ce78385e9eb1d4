// What the solver shows at each display, beside Caffe's lines: progress
// towards max_iter, the time left, throughput and learning rate, on a line
// of its own so that Caffe's tools/extra/parse_log.py and parse_log.sh,
// which read the Caffe lines, still parse the log:
//
//   Iteration 100 (25 iter/s, 4s/100 iters), loss = 0.31      (Caffe 1.0)
//       Train net output #0: loss = 0.29 (* 1 = 0.29 loss)    (Caffe)
//       Progress: 100/10000 (1.0%), ETA 6m 36s, 1600 images/s, learning rate 0.00992565
//       Data wait: 2.1% of the time since the last display
//   Iteration 100, lr = 0.00992565                            (Caffe, SGD solvers)
//
// The progress line avoids what Caffe's parsers look for ("Iteration ",
// ", loss = ", "lr = ", "net output #").
//
// ProgressLog writes these lines, and the test outputs after each test, as
// an observer of the solver (xtrain/training_observer.hpp); every root
// solver has one.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/net.hpp"
#include "xtrain/training_observer.hpp"

namespace xtrain {

struct ProgressFigures {
  int iteration = 0;
  int max_iter = 0;
  double seconds_left = -1;       // < 0: unknown
  double images_per_second = -1;  // < 0: unknown (left out)
  double learning_rate = 0;
};

// "Progress: 100/10000 (1.0%), ETA 6m 36s, 1600 images/s, learning rate 0.01"
std::string progress_line(const ProgressFigures& figures);

// "6m 36s", "2h 05m", "42s".
std::string format_eta(double seconds);

// Images one iteration trains on: the batch (the first blob's num) times
// iter_size times the data-parallel replicas.
double images_per_iteration(const Net& net, int iter_size, int replicas);

// " (* 1 = 0.123 loss)" after an output that is a weighted loss, as Caffe
// prints it after a net output.
std::string loss_suffix(float loss_weight, float value);

class ProgressLog : public TrainingObserver {
 public:
  void on_start(const TrainingStart& event) override;
  void on_display(const TrainingDisplay& event) override;
  void on_test(const TestDone& event) override;

 private:
  void say_if_diverged(const TrainingDisplay& event);

  // The first display of this session: the ETA comes from the speed since
  // then (tests and snapshots included), or the last interval's before that.
  int origin_iteration_ = -1;
  std::chrono::steady_clock::time_point origin_time_;
  // A loss of inf or nan is said once: every display after it repeats it.
  bool said_diverged_ = false;
};

// Seconds the train and test nets' data layers waited for input since the
// last call (see data/data_wait.hpp).
double take_data_wait(const Net& train_net, const std::vector<std::shared_ptr<Net>>& test_nets);

}  // namespace xtrain

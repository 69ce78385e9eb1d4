// The session's time budget (SolverParameter max_seconds): a job under a
// scheduler's time limit, or a notebook that vanishes, must stop in time to
// write its snapshot. The budget watches how long tests and snapshots take
// (an observer of the solver) and tells the loop, after each iteration,
// whether one more iteration plus a snapshot could overrun it.
#pragma once

#include <chrono>
#include <cstddef>

#include "xtrain/training_observer.hpp"

namespace xtrain {

class TimeBudget : public TrainingObserver {
 public:
  // `max_seconds` <= 0: no budget. `snapshot_bytes`: what a snapshot writes
  // (weights and history), to guess its time before the first one.
  TimeBudget(double max_seconds, std::chrono::steady_clock::time_point session_start,
             std::size_t snapshot_bytes);

  void on_test(const TestDone& event) override;
  void on_snapshot(const SnapshotWritten& event) override {
    last_snapshot_seconds_ = event.write_seconds;
  }

  // Whether the next iteration (one that took `iteration_seconds`, plus a
  // test if `test_comes_next`) and a snapshot after it could end past the
  // budget.
  bool nearly_spent(double iteration_seconds, bool test_comes_next) const;
  double max_seconds() const { return max_seconds_; }

 private:
  double max_seconds_;
  std::chrono::steady_clock::time_point session_start_;
  std::size_t snapshot_bytes_;
  // The time of the last test, all test nets together.
  int last_test_iteration_ = -1;
  double last_test_seconds_ = 0;
  double last_snapshot_seconds_ = -1;  // -1: no snapshot yet this session
};

}  // namespace xtrain

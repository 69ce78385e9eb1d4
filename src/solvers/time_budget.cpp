#include "solvers/time_budget.hpp"

namespace xtrain {

TimeBudget::TimeBudget(double max_seconds, std::chrono::steady_clock::time_point session_start,
                       std::size_t snapshot_bytes)
    : max_seconds_(max_seconds), session_start_(session_start), snapshot_bytes_(snapshot_bytes) {}

void TimeBudget::on_test(const TestDone& event) {
  if (event.iteration != last_test_iteration_) last_test_seconds_ = 0;
  last_test_iteration_ = event.iteration;
  last_test_seconds_ += event.test_seconds;
}

bool TimeBudget::nearly_spent(double iteration_seconds, bool test_comes_next) const {
  if (max_seconds_ <= 0) return false;
  // Before the first snapshot, guess its time from the bytes to write at a
  // slow disk's 50 MB/s.
  double snapshot_seconds = last_snapshot_seconds_;
  if (snapshot_seconds < 0) {
    snapshot_seconds = 0.5 + 3.0 * static_cast<double>(snapshot_bytes_) / 50e6;
  }
  const double next_iteration =
      1.5 * iteration_seconds + (test_comes_next ? last_test_seconds_ : 0.0);
  const double margin = 1.0;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - session_start_).count();
  return elapsed + next_iteration + 1.5 * snapshot_seconds + margin > max_seconds_;
}

}  // namespace xtrain

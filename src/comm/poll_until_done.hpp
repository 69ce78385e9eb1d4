// Waiting for a non-blocking collective without waiting forever: the
// backends (MPI, NCCL) poll their request with this one loop.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace xtrain {

// Calls done() until it returns true (then true) or timeout_seconds have
// passed (then false). Spins for the first 5 ms, which a gradient sum of a
// few MB takes, yielding to a rank on the same core; then sleeps between
// polls, 10 us doubling up to 1 ms, so that a long wait for a slow rank
// leaves the CPU to the data threads. done() may throw.
template <typename Done>
bool poll_until_done(double timeout_seconds, Done done) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(timeout_seconds));
  const auto spin_until = start + std::chrono::milliseconds(5);
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    if (done()) return true;
    const auto now = Clock::now();
    if (now >= deadline) return false;
    if (now >= spin_until) {
      pause = std::min(std::chrono::microseconds(1000),
                       std::max(std::chrono::microseconds(10), pause * 2));
      std::this_thread::sleep_for(pause);
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace xtrain

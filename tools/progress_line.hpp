// A progress line for the long-running converters, at most every
// `interval_seconds` (and always for the last item):
//   "Processed 2500/10000 images (25.0%), 812.3 images/s, ETA 0:00:09"
// The rate is the average since the start, so it steadies as the run goes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>

#include "xtrain/logging.hpp"

namespace xtrain::tools {

class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;

  ProgressLine(std::size_t total, std::string unit, double interval_seconds)
      : total_(total), unit_(std::move(unit)), interval_seconds_(interval_seconds) {}

  // Call after each item; `done` counts items handled so far.
  void update(std::size_t done) {
    const Clock::time_point now = Clock::now();
    if (done < total_ && seconds_between(last_line_, now) < interval_seconds_) return;
    last_line_ = now;
    XLOG(INFO) << line(done, now);
  }

  double elapsed_seconds() const { return seconds_between(start_, Clock::now()); }
  double rate(std::size_t done) const {
    const double seconds = elapsed_seconds();
    return seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  }

 private:
  static double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
  }

  std::string line(std::size_t done, Clock::time_point now) const {
    const double seconds = seconds_between(start_, now);
    const double per_second = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
    char text[160];
    const double percent = total_ > 0 ? 100.0 * static_cast<double>(done) / total_ : 100.0;
    if (done >= total_ || per_second <= 0) {
      std::snprintf(text, sizeof text, "Processed %zu/%zu %s (%.1f%%), %.1f %s/s, %.1f s", done,
                    total_, unit_.c_str(), percent, per_second, unit_.c_str(), seconds);
    } else {
      const long eta = static_cast<long>(static_cast<double>(total_ - done) / per_second + 0.5);
      std::snprintf(text, sizeof text,
                    "Processed %zu/%zu %s (%.1f%%), %.1f %s/s, ETA %ld:%02ld:%02ld", done, total_,
                    unit_.c_str(), percent, per_second, unit_.c_str(), eta / 3600, (eta / 60) % 60,
                    eta % 60);
    }
    return text;
  }

  std::size_t total_;
  std::string unit_;
  double interval_seconds_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_line_ = start_;
};

}  // namespace xtrain::tools

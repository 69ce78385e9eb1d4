// Caffe-shaped log lines ("I1121 23:50:03.123456  4242 solver.cpp:312] ...")
// so that existing log parsers (Caffe's parse_log) read ours unchanged.
#pragma once

#include <sstream>

#include "xtrain/export.hpp"

namespace xtrain {

enum class LogSeverity { kInfo = 0, kWarning = 1, kError = 2 };

// Messages below this severity are dropped (default: kInfo, i.e. all, or
// what the environment's GLOG_minloglevel says, as glog reads it: 1 drops
// INFO, 2 and 3 drop INFO and WARNING).
XTRAIN_API void set_min_log_severity(LogSeverity severity);
XTRAIN_API LogSeverity min_log_severity();
// The same for the calling thread only, on top of the process's setting (the
// higher wins): replicas of a training other than the root, each on a
// thread of its own, log warnings and errors only.
XTRAIN_API void set_min_log_severity_of_this_thread(LogSeverity severity);
XTRAIN_API LogSeverity min_log_severity_of_this_thread();

namespace detail {
// Collects one message and writes it, whole, to stderr when destroyed.
class XTRAIN_API LogMessage {
 public:
  LogMessage(LogSeverity severity, const char* file, int line);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogSeverity severity_;
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace xtrain

#define XTRAIN_LOG_SEVERITY_INFO ::xtrain::LogSeverity::kInfo
#define XTRAIN_LOG_SEVERITY_WARNING ::xtrain::LogSeverity::kWarning
#define XTRAIN_LOG_SEVERITY_ERROR ::xtrain::LogSeverity::kError

// XLOG(INFO) << "Iteration " << iter << ", loss = " << loss;
#define XLOG(severity) \
  ::xtrain::detail::LogMessage(XTRAIN_LOG_SEVERITY_##severity, __FILE__, __LINE__).stream()

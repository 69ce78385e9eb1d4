#include "xtrain/logging.hpp"

#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace xtrain {
namespace {

// glog's GLOG_minloglevel, which Caffe's users set to quiet the tools and
// pycaffe (0 INFO, 1 WARNING, 2 ERROR, 3 FATAL: errors are still shown, as a
// tool's last word must be).
int severity_from_environment() {
  const char* value = std::getenv("GLOG_minloglevel");
  if (value == nullptr || *value < '0' || *value > '9' || value[1] != '\0') {
    return static_cast<int>(LogSeverity::kInfo);
  }
  const int level = *value - '0';
  return level > static_cast<int>(LogSeverity::kError) ? static_cast<int>(LogSeverity::kError)
                                                       : level;
}

std::atomic<int> g_min_severity{severity_from_environment()};
thread_local int t_min_severity = static_cast<int>(LogSeverity::kInfo);

const char* base_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}
}  // namespace

void set_min_log_severity(LogSeverity severity) {
  g_min_severity = static_cast<int>(severity);
}

LogSeverity min_log_severity() { return static_cast<LogSeverity>(g_min_severity.load()); }

void set_min_log_severity_of_this_thread(LogSeverity severity) {
  t_min_severity = static_cast<int>(severity);
}

LogSeverity min_log_severity_of_this_thread() { return static_cast<LogSeverity>(t_min_severity); }

namespace detail {

LogMessage::LogMessage(LogSeverity severity, const char* file, int line)
    : severity_(severity) {
  // glog's prefix: severity letter, MMDD, time with microseconds, thread id,
  // file:line. Caffe's tools/extra/parse_log.* depend on this shape.
  timeval now{};
  gettimeofday(&now, nullptr);
  tm local{};
  localtime_r(&now.tv_sec, &local);
  static const char kLetters[] = {'I', 'W', 'E'};
  char prefix[96];
  std::snprintf(prefix, sizeof(prefix), "%c%02d%02d %02d:%02d:%02d.%06ld %5ld %s:%d] ",
                kLetters[static_cast<int>(severity)], local.tm_mon + 1, local.tm_mday,
                local.tm_hour, local.tm_min, local.tm_sec, static_cast<long>(now.tv_usec),
                static_cast<long>(syscall(SYS_gettid)), base_name(file), line);
  stream_ << prefix;
}

LogMessage::~LogMessage() {
  const int severity = static_cast<int>(severity_);
  if (severity < g_min_severity.load() || severity < t_min_severity) return;
  stream_ << '\n';
  const std::string text = stream_.str();
  // One write per message, so lines from several threads do not interleave.
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace detail
}  // namespace xtrain

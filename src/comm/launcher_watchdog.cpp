// guard_against_a_stuck_launcher: find the launcher among our ancestors, fork
// a process that outlives us to kill it if it does not end the job.
#include "comm/launcher_watchdog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace xtrain {
namespace {

constexpr const char* kLaunchers[] = {"mpirun", "mpiexec", "orterun", "orted",
                                      "prterun", "prted", "prte"};

struct ProcessStat {
  pid_t parent = 0;
  std::string name;
  unsigned long long start_ticks = 0;  // field 22: when it started, in clock ticks
};

// /proc/PID/stat: "pid (name) state ppid ... starttime ..."; the name may
// hold spaces and parentheses, so it ends at the last ')'.
bool read_stat(pid_t pid, ProcessStat* stat) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  stat->name = text.substr(open + 1, close - open - 1);
  // After ") ": state(3) ppid(4) ... starttime(22): skip to the fields.
  const char* fields = text.c_str() + close + 2;
  int field = 3;
  char* end = nullptr;
  for (const char* at = fields; *at != '\0' && field <= 22; ++field) {
    while (*at == ' ') ++at;
    if (field == 4) stat->parent = static_cast<pid_t>(std::strtol(at, &end, 10));
    if (field == 22) stat->start_ticks = std::strtoull(at, &end, 10);
    while (*at != '\0' && *at != ' ') ++at;
  }
  return field > 22;
}

bool is_launcher(const std::string& name) {
  for (const char* launcher : kLaunchers) {
    if (name == launcher) return true;
  }
  return false;
}

// Async-signal-safe helpers for the forked child (the parent may have other
// threads, so the child may only make system calls).
void write_text(int fd, const char* text) {
  const ssize_t ignored = ::write(fd, text, std::strlen(text));
  (void)ignored;
}

bool same_process(pid_t pid, unsigned long long start_ticks, const char* stat_path) {
  if (::kill(pid, 0) != 0) return false;
  const int fd = ::open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[1024];
  const ssize_t length = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (length <= 0) return false;
  text[length] = '\0';
  const char* close = nullptr;
  for (const char* at = text; *at != '\0'; ++at) {
    if (*at == ')') close = at;
  }
  if (close == nullptr) return false;
  int field = 3;
  unsigned long long ticks = 0;
  for (const char* at = close + 2; *at != '\0' && field <= 22; ++field) {
    while (*at == ' ') ++at;
    if (field == 22) {
      for (; *at >= '0' && *at <= '9'; ++at) ticks = ticks * 10 + static_cast<unsigned>(*at - '0');
    }
    while (*at != '\0' && *at != ' ') ++at;
  }
  return ticks == start_ticks;
}

// `say`: where the line goes, the launcher's own stderr if it could be
// opened (the rank's stderr is a pipe into the launcher, which is about to go).
[[noreturn]] void watch(pid_t launcher, unsigned long long start_ticks, const char* stat_path,
                        const char* message, int say, double grace_seconds) {
  ::setsid();  // out of the rank's process group, which the launcher kills
  ::signal(SIGPIPE, SIG_IGN);
  // Keep no socket of the rank open: its peers must see it close.
  if (::dup2(say, 3) != 3) ::dup2(2, 3);
  // Nor the rank's output pipes: the launcher may wait for their end.
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
    if (null > 3) ::close(null);
  }
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
#endif
    for (int fd = 4; fd < 4096; ++fd) ::close(fd);
  const timespec tick{0, 100 * 1000 * 1000};
  for (double waited = 0; waited < grace_seconds; waited += 0.1) {
    if (!same_process(launcher, start_ticks, stat_path)) ::_exit(0);
    ::nanosleep(&tick, nullptr);
  }
  if (same_process(launcher, start_ticks, stat_path)) {
    write_text(3, message);
    ::kill(launcher, SIGKILL);
  }
  ::_exit(0);
}

}  // namespace

void guard_against_a_stuck_launcher(double grace_seconds) {
  // This process, if MPI_Abort neither returns nor ends it.
  ::signal(SIGALRM, SIG_DFL);
  ::alarm(static_cast<unsigned>(grace_seconds) + 5);
  pid_t pid = ::getppid();
  ProcessStat stat;
  for (int level = 0; level < 4 && pid > 1; ++level, pid = stat.parent) {
    if (!read_stat(pid, &stat)) return;
    if (!is_launcher(stat.name)) continue;
    // Everything the child needs, made before fork (no allocation after it).
    static char stat_path[64];
    std::snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", static_cast<int>(pid));
    static char message[256];
    std::snprintf(message, sizeof(message),
                  "xtrain: %s (pid %d) had not ended the job %.0f s after MPI_Abort (a node it "
                  "cannot reach?): killing it\n",
                  stat.name.c_str(), static_cast<int>(pid), grace_seconds);
    char launcher_stderr[64];
    std::snprintf(launcher_stderr, sizeof(launcher_stderr), "/proc/%d/fd/2",
                  static_cast<int>(pid));
    // Appending: a log file opened by the shell keeps what is in it.
    int say = ::open(launcher_stderr, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (say < 0) say = 2;
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child == 0) watch(pid, stat.start_ticks, stat_path, message, say, grace_seconds);
    if (say != 2) ::close(say);
    return;
  }
}

}  // namespace xtrain

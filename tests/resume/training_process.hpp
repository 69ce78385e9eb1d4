// Running `xtrain train` in the background, to signal or kill it mid-run.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

namespace xtrain::testing {

class BackgroundProcess {
 public:
  // Runs `command` through sh, stdout and stderr to `log_path`.
  BackgroundProcess(const std::string& command, const std::string& log_path) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string line = "exec " + command + " > '" + log_path + "' 2>&1";
      ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~BackgroundProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait_exit_code();
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  bool started() const { return pid_ > 0; }
  void send(int signal_number) const { ::kill(pid_, signal_number); }
  // The exit code, or 128 + the signal that ended it.
  int wait_exit_code() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Waits until the file contains a match of `pattern`; false after `seconds`.
inline bool wait_for_text(const std::string& path, const std::string& pattern, double seconds) {
  const std::regex wanted(pattern);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::regex_search(read_text(path), wanted)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The highest N of the "Iteration N" display lines in a training log (-1: none).
inline int last_displayed_iteration(const std::string& log) {
  static const std::regex line(R"(Iteration (\d+) \()");
  int last = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), line), end; it != end; ++it) {
    last = std::max(last, std::stoi((*it)[1].str()));
  }
  return last;
}

}  // namespace xtrain::testing

#include "core/hdf5_crash_isolation.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// How the child ends: the read finished, or threw an xtrain::Error (whose
// message follows on the pipe). Anything else is a crash (a signal, or under
// a sanitizer its report and exit code).
constexpr int kReadFinished = 0;
constexpr int kReadThrewError = 3;

void write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    written += static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<std::size_t>(n));
  }
}

[[noreturn]] void run_child(int message_fd, const std::function<void()>& read) {
  // Die of the fault itself: a handler the application installed (a crash
  // reporter, a sanitizer, a fuzzer) would take the child's fault for one of
  // its own.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    ::sigaction(signal, &default_action, nullptr);
  }
  int code = kReadFinished;
  try {
    read();
  } catch (const Error& error) {
    write_all(message_fd, error.what());
    code = kReadThrewError;
  } catch (...) {
    code = kReadThrewError + 1;
  }
  // _exit: no atexit handlers, no stdio flush, nothing of the parent's
  // state touched twice.
  ::_exit(code);
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) {
    const int signal = WTERMSIG(status);
    return std::string("signal ") + std::to_string(signal) + ", " + ::strsignal(signal);
  }
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

void survive_hdf5_read(const std::string& path, const std::string& kind,
                       const std::string& advice, const std::function<void()>& read) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    XLOG(WARNING) << "cannot check " << kind << " '" << path
                  << "' in a separate process first (pipe: " << std::strerror(errno)
                  << "); reading it directly";
    return;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    XLOG(WARNING) << "cannot check " << kind << " '" << path
                  << "' in a separate process first (fork: " << std::strerror(errno)
                  << "); reading it directly";
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return;
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    run_child(pipe_fds[1], read);
  }
  ::close(pipe_fds[1]);
  const std::string message = read_all(pipe_fds[0]);
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return;  // not ours to wait for after all: read directly
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kReadFinished) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kReadThrewError) throw Error(message);
  throw Error(kind + " '" + path + "' is damaged: the HDF5 library crashed reading it (" +
              how_it_ended(status) +
              ", in a separate process xtrain reads HDF5 files in first); the file is not as "
              "xtrain or Caffe wrote it: " + advice);
}

}  // namespace xtrain

#include "piped_program.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "xtrain/error.hpp"

extern char** environ;

namespace xtrain::cli {
namespace {

// Both ends of a pipe, closed when it goes out of scope.
struct Pipe {
  int read_end = -1;
  int write_end = -1;

  Pipe() {
    int ends[2];
    XTRAIN_CHECK(::pipe2(ends, O_CLOEXEC) == 0, "cannot create a pipe: ", std::strerror(errno));
    read_end = ends[0];
    write_end = ends[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  void close_read() {
    if (read_end >= 0) ::close(read_end);
    read_end = -1;
  }
  void close_write() {
    if (write_end >= 0) ::close(write_end);
    write_end = -1;
  }
};

// Ignores SIGPIPE while alive, so that a child that exits before reading all
// its input makes write() fail with EPIPE instead of killing us.
class SigpipeIgnored {
 public:
  SigpipeIgnored() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &previous_);
  }
  ~SigpipeIgnored() { ::sigaction(SIGPIPE, &previous_, nullptr); }
  SigpipeIgnored(const SigpipeIgnored&) = delete;
  SigpipeIgnored& operator=(const SigpipeIgnored&) = delete;

 private:
  struct sigaction previous_ {};
};

pid_t spawn(const std::vector<std::string>& arguments, Pipe& input, Pipe& output, Pipe& error,
            const std::string& missing_hint) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, input.read_end, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, output.write_end, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, error.write_end, STDERR_FILENO);
  // The child starts with SIGPIPE at its default, whatever we do with ours.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t default_signals;
  ::sigemptyset(&default_signals);
  ::sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &default_signals);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int status = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (status == ENOENT) throw Error("'" + arguments[0] + "' was not found on PATH" + missing_hint);
  XTRAIN_CHECK(status == 0, "cannot run '", arguments[0], "': ", std::strerror(status));
  return pid;
}

}  // namespace

ProgramResult run_piped_program(const std::vector<std::string>& arguments, const std::string& input,
                                const std::string& missing_hint) {
  XTRAIN_CHECK(!arguments.empty(), "run_piped_program: no program given");
  const SigpipeIgnored sigpipe_ignored;
  Pipe to_child;
  Pipe from_child;
  Pipe errors_from_child;
  const pid_t pid = spawn(arguments, to_child, from_child, errors_from_child, missing_hint);
  to_child.close_read();
  from_child.close_write();
  errors_from_child.close_write();
  ::fcntl(to_child.write_end, F_SETFL, O_NONBLOCK);

  // Feed stdin while draining stdout and stderr, so that a child that writes
  // much before it has read everything cannot block us both.
  ProgramResult result;
  std::size_t written = 0;
  if (input.empty()) to_child.close_write();
  while (from_child.read_end >= 0 || errors_from_child.read_end >= 0) {
    pollfd fds[3] = {{to_child.write_end, POLLOUT, 0},
                     {from_child.read_end, POLLIN, 0},
                     {errors_from_child.read_end, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      const ssize_t count =
          ::write(to_child.write_end, input.data() + written, input.size() - written);
      if (count > 0) written += static_cast<std::size_t>(count);
      // All written, or the child stopped reading (EPIPE): it sees end of file.
      if (written == input.size() || (count < 0 && errno != EAGAIN && errno != EINTR)) {
        to_child.close_write();
      }
    }
    const auto drain = [](pollfd& fd, Pipe& pipe, std::string* text) {
      if (fd.revents == 0) return;
      char buffer[4096];
      const ssize_t count = ::read(pipe.read_end, buffer, sizeof(buffer));
      if (count > 0) {
        text->append(buffer, static_cast<std::size_t>(count));
      } else if (count == 0 || (errno != EAGAIN && errno != EINTR)) {
        pipe.close_read();
      }
    };
    drain(fds[1], from_child, &result.standard_output);
    drain(fds[2], errors_from_child, &result.standard_error);
  }
  to_child.close_write();

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace xtrain::cli

#include "data/lmdb_fault_guard.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace xtrain {
namespace {

// The database the current thread is reading, or null.
thread_local const char* reading_database = nullptr;

struct sigaction previous_segv {};
struct sigaction previous_bus {};

void write_all(const char* text) {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t written = ::write(STDERR_FILENO, text, left);
    if (written <= 0) return;
    text += written;
    left -= static_cast<std::size_t>(written);
  }
}

// Async-signal-safe: write(2) and _exit(2) only.
void on_fault(int signal, siginfo_t* info, void* context) {
  const char* database = reading_database;
  if (database != nullptr) {
    write_all(program_invocation_short_name);  // "xtrain", "compute_mean", ...
    write_all(": error: LMDB '");
    write_all(database);
    write_all(signal == SIGBUS ? "' is damaged: reading it faulted (SIGBUS)"
                               : "' is damaged: reading it faulted (SIGSEGV)");
    write_all(
        " inside its memory-mapped file; rebuild the database (convert_imageset, "
        "convert_mnist_data). Snapshots written so far are intact.\n");
    ::_exit(1);
  }
  // Not ours: what was there before, or the default (a crash with a core).
  const struct sigaction& previous = signal == SIGBUS ? previous_bus : previous_segv;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
      previous.sa_handler != nullptr) {
    previous.sa_handler(signal);
    return;
  }
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void install_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSEGV, &action, &previous_segv);
  ::sigaction(SIGBUS, &action, &previous_bus);
}

}  // namespace

LmdbFaultGuard::LmdbFaultGuard(const char* database_path) : previous_(reading_database) {
  static std::once_flag installed;
  std::call_once(installed, install_handler);
  reading_database = database_path;
}

LmdbFaultGuard::~LmdbFaultGuard() { reading_database = previous_; }

}  // namespace xtrain

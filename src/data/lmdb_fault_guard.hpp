// A damaged LMDB must not kill the process without a word.
//
// LMDB trusts its pages: a database with damaged bytes can send
// mdb_cursor_get (or a read of a record it returned) to an address outside
// the file, and the process dies of SIGSEGV/SIGBUS in the prefetch thread.
// Sizes are checked before reading (LmdbCursor), but a wild page pointer
// shows only as the signal. While a thread reads an LMDB under an
// LmdbFaultGuard, such a signal ends the process with one line naming the
// database and what to do (exit code 1); snapshots already written are
// whole, since they are written to a temporary file and renamed. A signal
// outside any guard keeps its usual effect (a crash, or the handler that was
// installed before).
#pragma once

namespace xtrain {

class LmdbFaultGuard {
 public:
  // `database_path` must outlive the guard (the database's own path string).
  explicit LmdbFaultGuard(const char* database_path);
  ~LmdbFaultGuard();
  LmdbFaultGuard(const LmdbFaultGuard&) = delete;
  LmdbFaultGuard& operator=(const LmdbFaultGuard&) = delete;

 private:
  const char* previous_;
};

}  // namespace xtrain

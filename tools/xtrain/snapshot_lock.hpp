// One training per snapshot_prefix at a time: `xtrain train` (the root rank
// of a job) holds <snapshot_prefix>.lock while it runs, so that a resubmitted
// job started while the first still runs refuses instead of interleaving its
// snapshots with the first's.
//
// The file names the holder (host, process id, start time) and the holder
// keeps an exclusive flock() on it, which the kernel drops when the process
// ends however it ends (SIGKILL included). So on one host a lock whose
// holder is gone is known to be stale and is taken over. On a shared file
// system (NFS) a lock taken on another host cannot be checked from here --
// its process may still run there, and NFS locks may be off (nolock,
// local_lock) -- so it is refused with the line that says how to clear it.
#pragma once

#include <string>

namespace xtrain::cli {

class SnapshotLock {
 public:
  // Takes the lock of `prefix` or throws xtrain::Error naming its holder.
  explicit SnapshotLock(const std::string& prefix);
  ~SnapshotLock();  // removes the file
  SnapshotLock(const SnapshotLock&) = delete;
  SnapshotLock& operator=(const SnapshotLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace xtrain::cli

// How the ranks of a Gloo job find each other: through a directory that
// every node sees (NFS, Lustre, a shared /tmp on one host), with Gloo's own
// FileStore, the way Caffe2's multi-node jobs met. Each rank writes its TCP
// address there, reads everyone else's, connects, and removes its entries
// once every rank has connected, so the directory is empty again for the
// next job (a resubmission, a resume).
//
// Defined only in builds with Gloo (XTRAIN_HAVE_GLOO).
#pragma once
#ifdef XTRAIN_HAVE_GLOO

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/device.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "xtrain/comm.hpp"

namespace xtrain {

// Gloo's FileStore under a prefix of its own, with the job's timeout on
// every wait (Gloo's own get() waits 30 s, too short for ranks that a batch
// system starts minutes apart), and refusing an entry that a killed job
// left behind instead of reading it as this job's.
class RendezvousDirectory final : public gloo::rendezvous::FileStore {
 public:
  // `prefix` separates jobs and the contexts of one job; timeout_seconds
  // bounds every wait.
  RendezvousDirectory(const std::string& directory, std::string prefix, double timeout_seconds);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Whether `key` is there now (no waiting).
  bool has(const std::string& key);
  // Whether rank `rank` has been here: its entries were seen while the job
  // formed, or are there now. (Ranks that gave up remove theirs, so what
  // was seen counts: a rank that left is not one that never came.)
  bool arrived(int rank);
  // Removes the entries this process wrote.
  void remove_own_entries();
  const std::string& directory() const { return directory_; }

 private:
  std::string directory_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::set<std::string> seen_;  // prefixed keys that a wait found
};

// A formed Gloo job: two fully connected contexts over one TCP device, one
// for the training's collectives and one for the liveness questions
// (GlooPeerWatch), which must stay usable when the first has failed.
struct GlooJob {
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> collectives;
  std::shared_ptr<gloo::rendezvous::Context> watch;
  std::vector<std::string> hosts;  // every rank's host name
  std::string address;             // where this rank listens, for the log
};

// Meets the other ranks of `group` in group.rendezvous. Throws xtrain::Error
// when the job has not formed within timeout_seconds (naming the ranks that
// never arrived), when the directory holds a killed job's entries, or when
// the ranks cannot connect (saying how to choose the interface).
GlooJob form_gloo_job(const ProcessGroup& group, double timeout_seconds);

}  // namespace xtrain

#endif  // XTRAIN_HAVE_GLOO

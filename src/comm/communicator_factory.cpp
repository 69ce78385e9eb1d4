// make_communicator: the single-process communicator, Gloo's or MPI's.
#include <memory>

#include "comm/gloo_communicator.hpp"
#include "comm/mpi_communicator.hpp"
#include "xtrain/comm.hpp"

#ifdef XTRAIN_USE_CUDA
#include "comm/nccl_communicator.hpp"
#endif
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// One process: every sum is its own value and every broadcast is already there.
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "none"; }
  void allreduce_sum(float*, std::size_t) override {}
  void allreduce_sum(double*, std::size_t) override {}
  void broadcast(float*, std::size_t, int root) override { check_root(root); }
  void broadcast(double*, std::size_t, int root) override { check_root(root); }
  void barrier() override {}

 private:
  static void check_root(int root) {
    XTRAIN_CHECK(root == 0, "broadcast from rank ", root, " in a job of one process (rank 0)");
  }
};

}  // namespace

bool mpi_available() {
#ifdef XTRAIN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool gloo_available() {
#ifdef XTRAIN_HAVE_GLOO
  return true;
#else
  return false;
#endif
}

// Gloo needs nothing: a rank that exits closes its connections, and the
// others' collectives fail at once naming it (src/comm/gloo_peer_watch.hpp).
void abort_job_at_exit() {
#ifdef XTRAIN_HAVE_MPI
  abort_mpi_job_at_exit();
#endif
}

std::unique_ptr<Communicator> make_communicator(const ProcessGroup& group, double timeout_seconds) {
  XTRAIN_CHECK(timeout_seconds > 0, "the collective timeout must be > 0 seconds, not ",
               timeout_seconds);
  XTRAIN_CHECK(group.size >= 1 && group.rank >= 0 && group.rank < group.size, "rank ", group.rank,
               " of ", group.size, " is not a place in a job");
  if (group.size == 1) return std::make_unique<SingleProcessCommunicator>();
  if (!group.rendezvous.empty()) {
#ifdef XTRAIN_HAVE_GLOO
    return make_gloo_communicator(group, timeout_seconds);
#else
    XTRAIN_CHECK(false, "this is rank ", group.rank, " of ", group.size,
                 " processes meeting in '", group.rendezvous,
                 "' (--rendezvous), but this xtrain was built without Gloo: install "
                 "libgloo-dev (scripts/install_deps.sh) and rebuild, or start the ranks with "
                 "mpirun");
#endif
  }
#ifdef XTRAIN_HAVE_MPI
  return make_mpi_communicator(group, timeout_seconds);
#else
  XTRAIN_CHECK(false, "this is rank ", group.rank, " of ", group.size, " processes (from ",
               group.launcher,
               "'s variables), but this xtrain was built without MPI: install "
               "libopenmpi-dev (scripts/install_deps.sh) and rebuild, or run one process");
  return nullptr;
#endif
}

std::unique_ptr<Communicator> make_gpu_communicator(Communicator& bootstrap, int device,
                                                    double timeout_seconds) {
#ifdef XTRAIN_USE_CUDA
  return make_nccl_communicator(bootstrap, device, timeout_seconds);
#else
  (void)device;
  (void)timeout_seconds;
  XTRAIN_CHECK(false, "rank ", bootstrap.rank(), " of ", bootstrap.size(),
               " asks for GPU ranks, but this xtrain was built without CUDA");
  return nullptr;
#endif
}

}  // namespace xtrain

// The MPI communicator: every collective is MPI's non-blocking form, polled
// with MPI_Test until done or until the deadline.
//
// After a timeout (or any MPI error) the collective is still pending and MPI
// cannot cancel it, so the communicator refuses every further call and the
// process-wide MpiSession calls MPI_Abort when the process exits: the tool
// prints the error, returns from main, and the launcher (mpirun, srun) then
// stops the other ranks, which may be stuck in that collective.
#ifdef XTRAIN_HAVE_MPI

#include "comm/mpi_communicator.hpp"

#include "comm/launcher_watchdog.hpp"
#include "comm/mpi_peer_probe.hpp"
#include "comm/poll_until_done.hpp"

// The C API only: MPI's deprecated C++ bindings need a library we don't link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/collective_messages.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

// MPI is initialised once per process (MPI cannot be initialised again after
// MPI_Finalize) and finalised when the process exits, or aborted there if a
// collective failed. A program that initialised MPI itself keeps that job.
class MpiSession {
 public:
  static MpiSession& instance() {
    static MpiSession session;
    return session;
  }
  // Why the job must end when this process exits (printed then).
  void mark_failed(const char* why) {
    if (failed_why_ == nullptr) failed_why_ = why;
  }

  ~MpiSession() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (failed_why_ != nullptr) {
      // Open MPI's own MPI_Abort banner can get lost this late in the exit.
      std::fprintf(stderr, "xtrain: %s: MPI_Abort ends the whole job\n", failed_why_);
      std::fflush(stderr);
      // The launcher must still reach every node to end the job; a node it
      // cannot reach (a cut link) makes Open MPI's mpirun wait for ever.
      guard_against_a_stuck_launcher();
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (owned_) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (initialized) {
      MPI_Query_thread(&provided);
    } else {
      prefer_ring_allreduce();
      // SERIALIZED: any one thread at a time may call, not only the main one.
      const int status = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      XTRAIN_CHECK(status == MPI_SUCCESS, "MPI_Init_thread failed: ", mpi_error_text(status));
      owned_ = true;
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    XTRAIN_CHECK(provided >= MPI_THREAD_SERIALIZED, "this MPI library offers thread level ",
                 provided, " but xtrain needs MPI_THREAD_SERIALIZED (", MPI_THREAD_SERIALIZED,
                 "): use an MPI built with thread support (Debian's libopenmpi-dev is)");
  }

  // Open MPI runs MPI_Iallreduce with libnbc, which picks the binomial
  // algorithm (a reduce to rank 0, then a broadcast, each moving the whole
  // buffer ceil(log2 N) times) for fewer than 4 ranks or an in-place sum --
  // always, for our in-place buckets. The ring moves 2(N-1)/N of the buffer
  // per rank: over TCP between nodes, LeNet's iteration at 100 Mbit/s took
  // 300 -> 160 ms on 2 nodes and 595 -> 250 ms on 3 (docs/distributed.md).
  // A user's own setting (the variable, or mpirun --mca, which sets it) wins.
  static void prefer_ring_allreduce() {
    ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "ring", /*overwrite=*/0);
  }

  bool owned_ = false;
  const char* failed_why_ = nullptr;
};

// MPI's name of the element type (the collectives move floats and doubles).
template <typename T>
MPI_Datatype mpi_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? MPI_FLOAT : MPI_DOUBLE;
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(const ProcessGroup& group, double timeout_seconds, std::size_t max_chunk)
      : session_(MpiSession::instance()),
        rank_(group.rank),
        size_(group.size),
        timeout_seconds_(timeout_seconds),
        max_chunk_(std::max<std::size_t>(1, std::min<std::size_t>(max_chunk, INT_MAX))) {
    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    XTRAIN_CHECK(mpi_rank == group.rank && mpi_size == group.size, "the launcher (", group.launcher,
                 ") says this is rank ", group.rank, " of ", group.size, " but MPI says rank ",
                 mpi_rank, " of ", mpi_size,
                 ": start every process with one mpirun (or srun with an MPI plugin), "
                 "not by hand or from a batch script directly");
    // A communicator of our own, so our collectives never match an
    // application's; MPI_Comm_idup keeps even this step under the timeout.
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Comm_idup(MPI_COMM_WORLD, &comm_, &request), "communicator setup", 0);
    wait(request, "communicator setup", 0);
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "communicator setup", 0);
    try {
      probe_ = std::make_unique<MpiPeerProbe>(comm_, rank_, size_, timeout_seconds_);
    } catch (const Error&) {
      fail();
      throw;
    }
  }

  ~MpiCommunicator() override {
    // After a failure a collective is still pending on comm_: leave it to
    // MPI_Abort at exit.
    if (failed_) {
      if (probe_) probe_->abandon();
      return;
    }
    probe_.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce_sum(float* data, std::size_t count) override { allreduce(data, count); }
  void allreduce_sum(double* data, std::size_t count) override { allreduce(data, count); }
  void broadcast(float* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }
  void broadcast(double* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }

  // MPI_Iallreduce per chunk; MPI advances them in MPI_Test, so the caller
  // should poll() now and then while it computes.
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    return start_allreduce(data, count);
  }

  void barrier() override {
    check_usable("barrier");
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm_, &request), "barrier", 0);
    wait(request, "barrier", 0);
  }

 private:
  struct Pending final : PendingCollective {
    Pending(MpiCommunicator& owner_of, std::size_t values) : owner(owner_of), count(values) {}
    bool poll() override {
      owner.probe_->answer();
      int done = 0;
      owner.check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                              MPI_STATUSES_IGNORE),
                  "allreduce", count);
      return done != 0;
    }
    void wait() override {
      if (poll_until_done(owner.timeout_seconds_, [&] { return poll(); })) return;
      throw Error(owner.timed_out("allreduce", count));
    }
    MpiCommunicator& owner;
    std::size_t count;
    std::vector<MPI_Request> requests;
  };

  // Every chunk's MPI_Iallreduce under way at once, in one Pending.
  template <typename T>
  std::unique_ptr<Pending> start_allreduce(T* data, std::size_t count) {
    check_usable("allreduce");
    auto pending = std::make_unique<Pending>(*this, count);
    for (std::size_t offset = 0; offset < count; offset += max_chunk_) {
      const int chunk = static_cast<int>(std::min(max_chunk_, count - offset));
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Iallreduce(MPI_IN_PLACE, data + offset, chunk, mpi_type<T>(), MPI_SUM, comm_,
                           &request),
            "allreduce", count);
      pending->requests.push_back(request);
    }
    return pending;
  }

  template <typename T>
  void allreduce(T* data, std::size_t count) {
    start_allreduce(data, count)->wait();
  }

  template <typename T>
  void broadcast_from(T* data, std::size_t count, int root) {
    check_usable("broadcast");
    XTRAIN_CHECK(root >= 0 && root < size_, "broadcast from rank ", root, " in a job of ", size_,
                 " processes");
    for (std::size_t offset = 0; offset < count; offset += max_chunk_) {
      const int chunk = static_cast<int>(std::min(max_chunk_, count - offset));
      MPI_Request request = MPI_REQUEST_NULL;
      check(MPI_Ibcast(data + offset, chunk, mpi_type<T>(), root, comm_, &request), "broadcast",
            count);
      wait(request, "broadcast", count);
    }
  }

  std::string where(const char* what, std::size_t count) const {
    return comm_messages::where(rank_, size_, what, count);
  }

  void fail() {
    failed_ = true;
    session_.mark_failed("a collective failed on this rank");
  }

  void check_usable(const char* what) const {
    XTRAIN_CHECK(!failed_, where(what, 0),
                 ": an earlier collective failed, so this communicator cannot be used; the job "
                 "ends when this process exits");
  }

  void check(int status, const char* what, std::size_t count) {
    if (status == MPI_SUCCESS) return;
    fail();
    throw Error(where(what, count) + " failed in MPI: " + mpi_error_text(status));
  }

  // Polls MPI_Test, which also drives MPI's progress (each test may run a
  // step of the collective's algorithm), until the request is done.
  void wait(MPI_Request& request, const char* what, std::size_t count) {
    const bool finished = poll_until_done(timeout_seconds_, [&] {
      if (probe_) probe_->answer();
      int done = 0;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what, count);
      return done != 0;
    });
    if (finished) return;
    throw Error(timed_out(what, count));
  }

  // The message of a collective past its deadline, after asking the other
  // ranks whether they are there (for at most 5 s): it names the silent ones.
  std::string timed_out(const char* what, std::size_t count) {
    fail();
    if (!probe_) return comm_messages::timeout(where(what, count), timeout_seconds_);
    const double asked_seconds = std::min(timeout_seconds_, 5.0);
    const std::vector<int> silent = probe_->silent_ranks(asked_seconds);
    return comm_messages::timeout_after_asking(where(what, count), timeout_seconds_,
                                               silent.empty() ? "" : probe_->describe(silent),
                                               asked_seconds);
  }

  MpiSession& session_;
  int rank_;
  int size_;
  double timeout_seconds_;
  std::size_t max_chunk_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<MpiPeerProbe> probe_;  // set once comm_ is
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(const ProcessGroup& group,
                                                    double timeout_seconds, std::size_t max_chunk) {
  return std::make_unique<MpiCommunicator>(group, timeout_seconds, max_chunk);
}

void abort_mpi_job_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MpiSession::instance().mark_failed("this rank ended with an error");
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_MPI

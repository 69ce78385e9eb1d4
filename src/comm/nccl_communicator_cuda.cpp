// The NCCL communicator: a non-blocking NCCL communicator whose set-up and
// collectives are polled against a deadline (see nccl_communicator.hpp).
//
// NCCL's non-blocking protocol (config.blocking = 0): ncclCommInitRankConfig
// and each collective may return ncclInProgress before the work is even
// enqueued; ncclCommGetAsyncError then reports ncclInProgress until it is,
// ncclSuccess after, or the error. A collective is done when, in addition,
// the stream it went on has finished (cudaStreamQuery == cudaSuccess).
#include "comm/nccl_communicator.hpp"

#include "xtrain/error.hpp"

#ifdef XTRAIN_HAVE_NCCL

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

#include "comm/collective_messages.hpp"
#include "comm/poll_until_done.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"

namespace xtrain {
namespace {

// NCCL's name of the element type (the collectives move floats and doubles).
template <typename T>
ncclDataType_t nccl_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  return std::is_same_v<T, float> ? ncclFloat32 : ncclFloat64;
}

// The 128-byte unique id as doubles: the bootstrap moves doubles' bits
// unchanged and the bytes are never read as numbers (no NaN canonicalising).
constexpr std::size_t kIdDoubles = (NCCL_UNIQUE_ID_BYTES + sizeof(double) - 1) / sizeof(double);

ncclUniqueId share_unique_id(Communicator& bootstrap) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (bootstrap.rank() == 0) {
    const ncclResult_t status = ncclGetUniqueId(&id);
    XTRAIN_CHECK(status == ncclSuccess, "rank 0 of ", bootstrap.size(),
                 ": ncclGetUniqueId failed: ", ncclGetErrorString(status), " (",
                 ncclGetLastError(nullptr), ")");
  }
  double packed[kIdDoubles] = {};
  std::memcpy(packed, &id, sizeof id);
  bootstrap.broadcast(packed, kIdDoubles, 0);
  std::memcpy(&id, packed, sizeof id);
  return id;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& bootstrap, int device, double timeout_seconds)
      : bootstrap_(bootstrap),
        rank_(bootstrap.rank()),
        size_(bootstrap.size()),
        device_(device),
        timeout_seconds_(timeout_seconds) {
    XTRAIN_CHECK(timeout_seconds > 0, "the collective timeout must be > 0 s, not ",
                 timeout_seconds);
    XTRAIN_CHECK(device >= 0, where("NCCL set-up", 0), ": no CUDA device ", device);
    // Checked before the id is shared, so a rank without a usable GPU says
    // so at once (the others then time out in the bootstrap broadcast or
    // in NCCL's set-up below, naming the rank that is missing).
    const cudaError_t selected = cudaSetDevice(device);
    XTRAIN_CHECK(selected == cudaSuccess, where("NCCL set-up", 0), ": CUDA device ", device,
                 " cannot be used: ", cudaGetErrorString(selected));
    const ncclUniqueId id = share_unique_id(bootstrap);

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // every call returns at once; we poll under the deadline
    const ncclResult_t status = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
    if (status != ncclSuccess && status != ncclInProgress) {
      fail_with("NCCL set-up", 0, status);
    }
    wait("NCCL set-up", 0, /*stream=*/nullptr);
    // No rank issues a collective before every rank's set-up has returned:
    // a rank still in set-up allocates device memory (cudaMalloc), which can
    // deadlock against another thread's GPU work that waits for its kernel
    // (GPUs driven by threads of one process: google/jax#11637).
    try {
      bootstrap.barrier();
    } catch (...) {
      abort_communicator();  // the destructor does not run
      throw;
    }
  }

  ~NcclCommunicator() override {
    // The handle and the barrier's buffer are of device_; the destructor may
    // run with another device current.
    int previous = -1;
    const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device_ &&
                          cudaSetDevice(device_) == cudaSuccess;
    // After an abort there is nothing of NCCL's left to free.
    if (!failed_ && comm_ != nullptr) {
      // ncclCommFinalize completes only once every rank has finalized
      // ("when the communicator is globally quiescent", nccl.h). A rank
      // destroyed by an exception cannot count on that: the others learn of
      // its failure only after it has unwound (ThreadReplicas::run), or
      // they have failed already. So it aborts, which never waits for them.
      if (std::uncaught_exceptions() > uncaught_at_construction_ || group_failed()) {
        abort_communicator();
      } else {
        finalize_and_destroy();
      }
    }
    // After NCCL's kernels have ended: cudaFree synchronizes the device,
    // and would wait forever behind a sum that another rank never joins.
    if (barrier_value_ != nullptr) cudaFree(barrier_value_);
    if (exchange_stream_ != nullptr) cudaStreamDestroy(exchange_stream_);
    if (switched) cudaSetDevice(previous);
  }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }
  bool works_on_device_memory() const override { return true; }

  void allreduce_sum(float* data, std::size_t count) override {
    allreduce(data, count, "allreduce");
  }
  void allreduce_sum(double* data, std::size_t count) override {
    allreduce(data, count, "allreduce");
  }
  void broadcast(float* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }
  void broadcast(double* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }

  // The sum goes on the exchange stream once the calling thread's stream has
  // reached this point (the gradients copied into `data`), so backward goes
  // on computing meanwhile; wait() returns when it is done.
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    check_usable("allreduce");
    cudaStream_t compute = our_stream("allreduce");
    cudaStream_t exchange = exchange_stream();
    cudaEvent_t ready = nullptr;
    XTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    XTRAIN_CUDA_CHECK(cudaEventRecord(ready, compute));
    XTRAIN_CUDA_CHECK(cudaStreamWaitEvent(exchange, ready, 0));
    XTRAIN_CUDA_CHECK(cudaEventDestroy(ready));  // freed once it has passed
    if (count > 0) {
      const ncclResult_t status =
          ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_, exchange);
      if (status != ncclSuccess && status != ncclInProgress) fail_with("allreduce", count, status);
      // The event below must follow NCCL's kernel on the stream: wait until
      // the non-blocking call has enqueued it.
      if (!poll_until_done(timeout_seconds_, [&] {
            check_group("allreduce", count);
            return enqueued("allreduce", count);
          })) {
        fail_with_timeout("allreduce", count);
      }
    }
    cudaEvent_t done = nullptr;
    XTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    XTRAIN_CUDA_CHECK(cudaEventRecord(done, exchange));
    return std::make_unique<Pending>(*this, count, done);
  }

  // NCCL has no barrier: an allreduce of one value on the device, which
  // returns only when every rank has joined. Its buffer lives as long as the
  // communicator (allocated on first use, on device_).
  void barrier() override {
    check_usable("barrier");
    our_stream("barrier");  // on device_, before allocating there
    if (barrier_value_ == nullptr) {
      XTRAIN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&barrier_value_), sizeof(float)));
    }
    allreduce(barrier_value_, 1, "barrier");
  }

 private:
  void finalize_and_destroy() noexcept {
    // Non-blocking: ncclCommFinalize flushes our operations and reports
    // ncclInProgress until the communicator is quiescent; then
    // ncclCommDestroy frees it without blocking. Failing that (a rank gone
    // since the last collective), ncclCommAbort. Never throws.
    ncclResult_t state = ncclCommFinalize(comm_);
    poll_until_done(timeout_seconds_, [&] {
      if (state == ncclInProgress && ncclCommGetAsyncError(comm_, &state) != ncclSuccess) {
        state = ncclInternalError;
      }
      // A failed rank never finalizes: give up on the others at once.
      if (state == ncclInProgress && group_failed()) state = ncclInternalError;
      return state != ncclInProgress;
    });
    if (state == ncclSuccess) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }

  template <typename T>
  void allreduce(T* data, std::size_t count, const char* what) {
    check_usable(what);
    if (count == 0) return;
    cudaStream_t stream = our_stream(what);
    // In place (sendbuff == recvbuff). The order of the sum is NCCL's, the
    // same on every rank for one communicator and count.
    const ncclResult_t status =
        ncclAllReduce(data, data, count, nccl_type<T>(), ncclSum, comm_, stream);
    if (status != ncclSuccess && status != ncclInProgress) fail_with(what, count, status);
    wait(what, count, stream);
  }

  template <typename T>
  void broadcast_from(T* data, std::size_t count, int root) {
    check_usable("broadcast");
    XTRAIN_CHECK(root >= 0 && root < size_, "broadcast from rank ", root, " in a job of ", size_,
                 " processes");
    if (count == 0) return;
    cudaStream_t stream = our_stream("broadcast");
    const ncclResult_t status =
        ncclBroadcast(data, data, count, nccl_type<T>(), root, comm_, stream);
    if (status != ncclSuccess && status != ncclInProgress) fail_with("broadcast", count, status);
    wait("broadcast", count, stream);
  }

  // The calling thread's stream, which must be on the communicator's device:
  // NCCL launches its kernels on the device the communicator was made for.
  cudaStream_t our_stream(const char* what) {
    int current = -1;
    XTRAIN_CUDA_CHECK(cudaGetDevice(&current));
    XTRAIN_CHECK(current == device_, where(what, 0), ": the calling thread is on CUDA device ",
                 current, " but this NCCL communicator is on device ", device_,
                 ": call it from the thread of its GPU");
    return cuda::stream();
  }

  std::string where(const char* what, std::size_t count) const {
    return comm_messages::where(rank_, size_, what, count);
  }

  void check_usable(const char* what) const {
    XTRAIN_CHECK(!failed_, where(what, 0),
                 ": an earlier collective failed, so this communicator cannot be used; the job "
                 "must end");
  }

  // Aborts the communicator (it stops our kernels still waiting for other
  // ranks, so the stream can drain) and throws.
  [[noreturn]] void fail_with(const char* what, std::size_t count, ncclResult_t status) {
    std::string detail = ncclGetErrorString(status);
    const char* last = ncclGetLastError(comm_);
    if (last != nullptr && *last != '\0') detail += std::string(" (") + last + ")";
    abort_communicator();
    throw Error(where(what, count) + " failed in NCCL: " + detail);
  }

  void abort_communicator() noexcept {
    failed_ = true;
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  // Whether NCCL has enqueued the work so far given to it
  // (ncclCommGetAsyncError == ncclSuccess); throws on an NCCL error.
  bool enqueued(const char* what, std::size_t count) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t queried = ncclCommGetAsyncError(comm_, &state);
    if (queried != ncclSuccess) fail_with(what, count, queried);
    if (state != ncclSuccess && state != ncclInProgress) fail_with(what, count, state);
    return state == ncclSuccess;
  }

  // Whether the GPU has run the work up to `query`'s stream or event
  // (cudaStreamQuery / cudaEventQuery); aborts and throws on a GPU error.
  template <typename Query>
  bool ran(const char* what, std::size_t count, Query query) {
    const cudaError_t status = query();
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady) {
      abort_communicator();
      throw Error(where(what, count) + " failed on the GPU: " + cudaGetErrorString(status));
    }
    return false;
  }

  // For the destructor, which must not throw: a failure() that throws
  // counts as a failed group (aborting is the safe way out).
  bool group_failed() const noexcept {
    try {
      return !bootstrap_.failure().empty();
    } catch (...) {
      return true;
    }
  }

  // Aborts and throws once the bootstrap's group has failed (a replica on
  // another thread threw): the collective waited for cannot finish, and
  // polling it until the timeout would only delay the job's end.
  void check_group(const char* what, std::size_t count) {
    const std::string failure = bootstrap_.failure();
    if (failure.empty()) return;
    abort_communicator();
    throw Error(where(what, count) + " cannot finish: " + failure);
  }

  [[noreturn]] void fail_with_timeout(const char* what, std::size_t count) {
    abort_communicator();
    throw Error(comm_messages::timeout(where(what, count), timeout_seconds_));
  }

  // Polls until NCCL has enqueued the work and, for a collective, the stream
  // has finished it.
  void wait(const char* what, std::size_t count, cudaStream_t stream) {
    const bool finished = poll_until_done(timeout_seconds_, [&] {
      check_group(what, count);
      if (!enqueued(what, count)) return false;
      return stream == nullptr ||  // set-up: nothing on a stream
             ran(what, count, [&] { return cudaStreamQuery(stream); });
    });
    if (!finished) fail_with_timeout(what, count);
  }

  // The stream the overlapped sums (start_allreduce_sum) run on, beside the
  // compute stream, created on first use.
  cudaStream_t exchange_stream() {
    if (exchange_stream_ == nullptr) {
      XTRAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&exchange_stream_, cudaStreamNonBlocking));
    }
    return exchange_stream_;
  }

  // An overlapped sum: done when its event on the exchange stream has passed.
  class Pending final : public PendingCollective {
   public:
    Pending(NcclCommunicator& owner, std::size_t count, cudaEvent_t done)
        : owner_(owner), count_(count), done_(done) {}
    ~Pending() override { cudaEventDestroy(done_); }
    Pending(const Pending&) = delete;
    Pending& operator=(const Pending&) = delete;
    bool poll() override {
      owner_.check_usable("allreduce");
      owner_.check_group("allreduce", count_);
      return owner_.enqueued("allreduce", count_) &&
             owner_.ran("allreduce", count_, [&] { return cudaEventQuery(done_); });
    }
    void wait() override {
      if (!poll_until_done(owner_.timeout_seconds_, [&] { return poll(); })) {
        owner_.fail_with_timeout("allreduce", count_);
      }
    }

   private:
    NcclCommunicator& owner_;
    std::size_t count_;
    cudaEvent_t done_;
  };

  Communicator& bootstrap_;  // outlives this (make_gpu_communicator)
  int rank_;
  int size_;
  int device_;
  double timeout_seconds_;
  // Exceptions under way when this was made: more in the destructor mean it
  // is being destroyed by one.
  int uncaught_at_construction_ = std::uncaught_exceptions();
  ncclComm_t comm_ = nullptr;
  cudaStream_t exchange_stream_ = nullptr;
  float* barrier_value_ = nullptr;
  bool failed_ = false;
};

}  // namespace

bool nccl_available() { return true; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device,
                                                     double timeout_seconds) {
  return std::make_unique<NcclCommunicator>(bootstrap, device, timeout_seconds);
}

}  // namespace xtrain

#else  // CUDA without NCCL

namespace xtrain {

bool nccl_available() { return false; }

std::unique_ptr<Communicator> make_nccl_communicator(Communicator&, int, double) {
  throw Error(
      "this xtrain was built without NCCL, so GPU ranks cannot exchange gradients on the "
      "device: install NCCL (libnccl-dev) and rebuild");
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_NCCL

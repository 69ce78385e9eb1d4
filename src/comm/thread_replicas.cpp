// ThreadReplicas: replicas of one training on threads of one process, and
// their communicators (backend "threads"), which work on host memory.
//
// A collective is one Operation, named by its place in each replica's
// sequence of collectives (every replica calls the same ones in the same
// order). A replica joins it with its buffer; once all have joined, each
// replica computes its own slice of the result and writes that slice into
// every replica's buffer (so the work is shared and no two threads write one
// value); then each waits until all have finished before it returns and
// touches its buffer again. The sum of each value runs in rank order, so
// every replica gets the same bits, whatever the timing.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "comm/collective_messages.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

namespace detail {

struct ThreadGroupState {
  enum class Kind {
    kAllreduceFloat,
    kAllreduceDouble,
    kBroadcastFloat,
    kBroadcastDouble,
    kBarrier
  };

  struct Operation {
    Kind kind = Kind::kBarrier;
    std::size_t count = 0;
    int root = 0;
    int first_rank = 0;          // who joined first, for mismatch messages
    std::vector<void*> buffers;  // by rank
    int joined = 0;
    int computed = 0;
    int left = 0;
  };

  ThreadGroupState(int replicas, double timeout) : size(replicas), timeout_seconds(timeout) {}

  const int size;
  const double timeout_seconds;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::uint64_t, Operation> operations;
  // Set when a replica failed: no collective can finish any more.
  std::string failure;
  // Whether `failure` is set, read without the mutex: the NCCL waits of
  // every replica poll it (Communicator::failure) thousands of times a
  // second.
  std::atomic<bool> failed{false};

  // With the mutex held. The first failure is the one reported.
  void fail_locked(const std::string& why) {
    if (failure.empty()) failure = why;
    failed.store(true, std::memory_order_release);
    changed.notify_all();
  }

  void abandon(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex);
    fail_locked(why);
  }

  std::string failure_message() {
    if (!failed.load(std::memory_order_acquire)) return "";
    std::lock_guard<std::mutex> lock(mutex);
    return failure;
  }
};

}  // namespace detail

namespace {

using Kind = detail::ThreadGroupState::Kind;
using Operation = detail::ThreadGroupState::Operation;

const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::kAllreduceFloat:
    case Kind::kAllreduceDouble:
      return "allreduce";
    case Kind::kBroadcastFloat:
    case Kind::kBroadcastDouble:
      return "broadcast";
    case Kind::kBarrier:
      return "barrier";
  }
  return "collective";
}

template <typename T>
void sum_slice(const Operation& operation, std::size_t begin, std::size_t end) {
  const std::size_t replicas = operation.buffers.size();
  for (std::size_t i = begin; i < end; ++i) {
    T sum = static_cast<const T*>(operation.buffers[0])[i];
    for (std::size_t r = 1; r < replicas; ++r)
      sum += static_cast<const T*>(operation.buffers[r])[i];
    for (std::size_t r = 0; r < replicas; ++r) static_cast<T*>(operation.buffers[r])[i] = sum;
  }
}

class ThreadCommunicator final : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<detail::ThreadGroupState> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return shared_->size; }
  std::string backend() const override { return "threads"; }

  void allreduce_sum(float* data, std::size_t count) override {
    finish(join(Kind::kAllreduceFloat, data, count, 0));
  }
  void allreduce_sum(double* data, std::size_t count) override {
    finish(join(Kind::kAllreduceDouble, data, count, 0));
  }
  void broadcast(float* data, std::size_t count, int root) override {
    finish(join(Kind::kBroadcastFloat, data, count, root));
  }
  void broadcast(double* data, std::size_t count, int root) override {
    finish(join(Kind::kBroadcastDouble, data, count, root));
  }
  void barrier() override { finish(join(Kind::kBarrier, nullptr, 0, 0)); }
  std::string failure() const override { return shared_->failure_message(); }

  // Joining is all the start does: the summing is shared out in wait(),
  // when every replica has joined.
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    class Pending final : public PendingCollective {
     public:
      Pending(ThreadCommunicator& owner, std::uint64_t id) : owner_(owner), id_(id) {}
      bool poll() override { return false; }
      void wait() override {
        if (waited_) return;
        waited_ = true;
        owner_.finish(id_);
      }

     private:
      ThreadCommunicator& owner_;
      std::uint64_t id_;
      bool waited_ = false;
    };
    return std::make_unique<Pending>(*this, join(Kind::kAllreduceFloat, data, count, 0));
  }

 private:
  std::string where(Kind kind, std::size_t count) const {
    return comm_messages::where(rank_, shared_->size, name_of(kind), count);
  }

  std::uint64_t join(Kind kind, void* data, std::size_t count, int root) {
    XTRAIN_CHECK(root >= 0 && root < shared_->size, "broadcast from rank ", root, " in a group of ",
                 shared_->size, " replicas");
    const std::uint64_t id = next_operation_++;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    check_not_abandoned(kind, count);
    auto [place, created] = shared_->operations.try_emplace(id);
    Operation& operation = place->second;
    if (created) {
      operation.kind = kind;
      operation.count = count;
      operation.root = root;
      operation.first_rank = rank_;
      operation.buffers.assign(static_cast<std::size_t>(shared_->size), nullptr);
    } else if (operation.kind != kind || operation.count != count || operation.root != root) {
      const std::string message =
          where(kind, count) + " (collective #" + std::to_string(id) + ") does not match rank " +
          std::to_string(operation.first_rank) + "'s " + name_of(operation.kind) + " of " +
          comm_messages::with_thousands(operation.count) +
          " values: every replica must call the same collectives in the same order";
      shared_->fail_locked(message);
      throw Error(message);
    }
    operation.buffers[static_cast<std::size_t>(rank_)] = data;
    ++operation.joined;
    shared_->changed.notify_all();
    return id;
  }

  void finish(std::uint64_t id) {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    Operation& operation = shared_->operations.at(id);
    const Kind kind = operation.kind;
    const std::size_t count = operation.count;
    wait_for(lock, kind, count, [&] { return operation.joined == shared_->size; });
    lock.unlock();
    compute_own_part(operation);
    lock.lock();
    ++operation.computed;
    shared_->changed.notify_all();
    wait_for(lock, kind, count, [&] { return operation.computed == shared_->size; });
    if (++operation.left == shared_->size) shared_->operations.erase(id);
  }

  void compute_own_part(const Operation& operation) {
    const std::size_t count = operation.count;
    const std::size_t replicas = static_cast<std::size_t>(shared_->size);
    const std::size_t rank = static_cast<std::size_t>(rank_);
    const std::size_t begin = count * rank / replicas;
    const std::size_t end = count * (rank + 1) / replicas;
    switch (operation.kind) {
      case Kind::kAllreduceFloat:
        sum_slice<float>(operation, begin, end);
        break;
      case Kind::kAllreduceDouble:
        sum_slice<double>(operation, begin, end);
        break;
      case Kind::kBroadcastFloat:
      case Kind::kBroadcastDouble: {
        const std::size_t bytes =
            count * (operation.kind == Kind::kBroadcastFloat ? sizeof(float) : sizeof(double));
        void* mine = operation.buffers[rank];
        const void* root = operation.buffers[static_cast<std::size_t>(operation.root)];
        if (mine != root && bytes > 0) std::memcpy(mine, root, bytes);
        break;
      }
      case Kind::kBarrier:
        break;
    }
  }

  template <typename Ready>
  void wait_for(std::unique_lock<std::mutex>& lock, Kind kind, std::size_t count, Ready ready) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::duration<double>(shared_->timeout_seconds));
    for (;;) {
      if (ready()) return;
      check_not_abandoned(kind, count);
      if (shared_->changed.wait_until(lock, deadline) == std::cv_status::timeout && !ready()) {
        check_not_abandoned(kind, count);
        const std::string message =
            comm_messages::timeout(where(kind, count), shared_->timeout_seconds);
        shared_->fail_locked(message);
        throw Error(message);
      }
    }
  }

  void check_not_abandoned(Kind kind, std::size_t count) const {
    if (shared_->failure.empty()) return;
    throw Error(where(kind, count) + " cannot finish: " + shared_->failure);
  }

  std::shared_ptr<detail::ThreadGroupState> shared_;
  int rank_;
  std::uint64_t next_operation_ = 0;
};

}  // namespace

ThreadReplicas::ThreadReplicas(int size, double timeout_seconds) {
  XTRAIN_CHECK(size >= 1, "a group of replicas needs at least one, not ", size);
  XTRAIN_CHECK(timeout_seconds > 0, "the collective timeout must be > 0 seconds, not ",
               timeout_seconds);
  shared_ = std::make_shared<detail::ThreadGroupState>(size, timeout_seconds);
  for (int rank = 0; rank < size; ++rank) {
    communicators_.push_back(std::make_unique<ThreadCommunicator>(shared_, rank));
  }
}

ThreadReplicas::~ThreadReplicas() = default;

int ThreadReplicas::size() const { return shared_->size; }

Communicator& ThreadReplicas::communicator(int rank) {
  XTRAIN_CHECK(rank >= 0 && rank < size(), "no replica ", rank, " in a group of ", size());
  return *communicators_[static_cast<std::size_t>(rank)];
}

void ThreadReplicas::run(const std::function<void(int rank)>& replica) {
  XTRAIN_CHECK(!ran_, "a group of replicas runs once; make a new ThreadReplicas");
  ran_ = true;
  std::mutex first_failure_mutex;
  std::exception_ptr first_failure;
  auto run_one = [&](int rank) {
    try {
      replica(rank);
    } catch (...) {
      std::string what = "an unknown exception";
      try {
        throw;
      } catch (const std::exception& error) {
        what = error.what();
      } catch (...) {
      }
      {
        std::lock_guard<std::mutex> lock(first_failure_mutex);
        if (!first_failure) first_failure = std::current_exception();
      }
      shared_->abandon("replica " + std::to_string(rank) + " failed: " + what);
    }
  };
  std::vector<std::thread> threads;
  for (int rank = 1; rank < size(); ++rank) threads.emplace_back(run_one, rank);
  run_one(0);
  for (std::thread& thread : threads) thread.join();
  if (first_failure) std::rethrow_exception(first_failure);
}

}  // namespace xtrain

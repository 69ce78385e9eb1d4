// The Gloo communicator: the ranks met in a shared directory; collectives run
// in order on a thread of their own, each under the timeout; a failure is
// explained by asking the peers (GlooPeerWatch) before it is thrown.
#ifdef XTRAIN_HAVE_GLOO

#include "comm/gloo_communicator.hpp"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <type_traits>

#include "comm/collective_messages.hpp"
#include "comm/gloo_peer_watch.hpp"
#include "comm/gloo_rendezvous.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// Gloo's messages start with "[/path/to/file.cc:123] ": the rest is for people.
std::string without_source_location(const std::string& text) {
  if (text.empty() || text.front() != '[') return text;
  const auto end = text.find("] ");
  return end == std::string::npos ? text : text.substr(end + 2);
}

// One collective in the queue.
struct Operation {
  std::function<void()> run;
  bool done = false;
  std::string error;  // Gloo's, when it failed
};

// What the communicator and its thread share; outlives the communicator
// when that thread is still inside Gloo after a failure.
struct OperationQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::shared_ptr<Operation>> waiting;
  bool stop = false;
  bool busy = false;    // the thread is inside a collective
  bool broken = false;  // one failed: the others cannot run
  GlooJob job;          // the contexts the collectives use

  void serve() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stop || !waiting.empty(); });
      if (waiting.empty()) return;  // stopped
      std::shared_ptr<Operation> operation = waiting.front();
      waiting.pop_front();
      if (broken) {
        operation->error = "an earlier collective failed";
      } else {
        busy = true;
        lock.unlock();
        std::string error;
        try {
          operation->run();
        } catch (const std::exception& failure) {
          error = without_source_location(failure.what());
          if (error.empty()) error = "an error without a message";
        }
        lock.lock();
        busy = false;
        operation->error = error;
        if (!error.empty()) broken = true;
      }
      operation->done = true;
      changed.notify_all();
    }
  }
};

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(const ProcessGroup& group, double timeout_seconds)
      : rank_(group.rank),
        size_(group.size),
        timeout_seconds_(timeout_seconds),
        timeout_(std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000 + 0.5))),
        queue_(std::make_shared<OperationQueue>()) {
    queue_->job = form_gloo_job(group, timeout_seconds);
    watch_ = std::make_unique<GlooPeerWatch>(queue_->job.watch, queue_->job.hosts);
    if (rank_ == 0) {
      XLOG(INFO) << "Gloo: " << size_ << " ranks met in '" << group.rendezvous
                 << "'; rank 0 listens on " << queue_->job.address;
    }
    std::shared_ptr<OperationQueue> queue = queue_;
    thread_ = std::thread([queue] { queue->serve(); });
  }

  ~GlooCommunicator() override {
    bool inside_gloo = false;
    {
      std::lock_guard<std::mutex> lock(queue_->mutex);
      queue_->stop = true;
      inside_gloo = queue_->busy;
      queue_->changed.notify_all();
    }
    if (inside_gloo) {
      // A collective that failed here still waits in Gloo (until its own
      // timeout): leave the thread, which owns the queue, to the exit.
      thread_.detach();
    } else {
      thread_.join();
    }
    // After a failure the peers may still ask who is there: keep answering
    // until the process exits.
    if (failed_) watch_.release();  // NOLINT(bugprone-unused-return-value): left to the exit
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "gloo"; }

  void allreduce_sum(float* data, std::size_t count) override {
    start_allreduce_sum(data, count)->wait();
  }
  void allreduce_sum(double* data, std::size_t count) override {
    start_allreduce(data, count)->wait();
  }
  std::unique_ptr<PendingCollective> start_allreduce_sum(float* data, std::size_t count) override {
    return start_allreduce(data, count);
  }
  void broadcast(float* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }
  void broadcast(double* data, std::size_t count, int root) override {
    broadcast_from(data, count, root);
  }
  void barrier() override {
    check_usable("barrier");
    const uint32_t tag = next_tag_++;
    auto context = queue_->job.collectives;
    const auto timeout = timeout_;
    Pending(*this, enqueue([context, tag, timeout] {
      gloo::BarrierOptions options(context);
      options.setTag(tag);
      options.setTimeout(timeout);
      gloo::barrier(options);
    }),
            "barrier", 0)
        .wait();
  }

 private:
  struct Pending final : PendingCollective {
    Pending(GlooCommunicator& owner_of, std::shared_ptr<Operation> operation_of, const char* what_of,
            std::size_t values)
        : owner(owner_of), operation(std::move(operation_of)), what(what_of), count(values) {}
    bool poll() override { return owner.finished(*operation, what, count, /*wait=*/false); }
    void wait() override { owner.finished(*operation, what, count, /*wait=*/true); }
    GlooCommunicator& owner;
    std::shared_ptr<Operation> operation;
    const char* what;
    std::size_t count;
  };

  std::shared_ptr<Operation> enqueue(std::function<void()> run) {
    auto operation = std::make_shared<Operation>();
    operation->run = std::move(run);
    std::lock_guard<std::mutex> lock(queue_->mutex);
    queue_->waiting.push_back(operation);
    queue_->changed.notify_all();
    return operation;
  }

  template <typename T>
  std::unique_ptr<Pending> start_allreduce(T* data, std::size_t count) {
    check_usable("allreduce");
    // Every rank numbers its collectives alike: Gloo matches them by tag.
    const uint32_t tag = next_tag_++;
    auto context = queue_->job.collectives;
    const auto timeout = timeout_;
    auto run = [context, data, count, tag, timeout] {
      if (count == 0) return;
      gloo::AllreduceOptions options(context);
      options.setOutput(data, count);  // in place: the output is the input
      // Gloo's ring: each element is summed once, on one rank, in a fixed
      // order, then copied to the others, so every rank gets the same bits.
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, std::size_t)>(&gloo::sum<T>));
      options.setTag(tag);
      options.setTimeout(timeout);
      gloo::allreduce(options);
    };
    return std::make_unique<Pending>(*this, enqueue(std::move(run)), "allreduce", count);
  }

  template <typename T>
  void broadcast_from(T* data, std::size_t count, int root) {
    check_usable("broadcast");
    XTRAIN_CHECK(root >= 0 && root < size_, "broadcast from rank ", root, " in a job of ", size_,
                 " processes");
    const uint32_t tag = next_tag_++;
    auto context = queue_->job.collectives;
    const auto timeout = timeout_;
    Pending(*this, enqueue([context, data, count, root, tag, timeout] {
      if (count == 0) return;
      gloo::BroadcastOptions options(context);
      options.setOutput(data, count);
      options.setRoot(root);
      options.setTag(tag);
      options.setTimeout(timeout);
      gloo::broadcast(options);
    }),
            "broadcast", count)
        .wait();
  }

  // Whether `operation` has finished (waiting up to the timeout when
  // `wait`); throws the failure's one line when it failed or did not finish.
  bool finished(const Operation& operation, const char* what, std::size_t count, bool wait) {
    std::string error;
    {
      std::unique_lock<std::mutex> lock(queue_->mutex);
      if (wait) {
        queue_->changed.wait_for(lock, timeout_, [&] { return operation.done; });
      }
      if (!operation.done) {
        if (!wait) return false;
      } else if (operation.error.empty()) {
        return true;
      } else {
        error = operation.error;
      }
    }
    throw Error(explain_failure(what, count, error));
  }

  void check_usable(const char* what) const {
    XTRAIN_CHECK(!failed_, comm_messages::where(rank_, size_, what, 0),
                 ": an earlier collective failed, so this communicator cannot be used; the job "
                 "ends when its processes exit");
  }

  // The one line of a failed collective (`gloo_error` empty: it did not
  // finish within the timeout). A closed connection is a rank gone (killed,
  // crashed) unless that rank said goodbye; else the ranks that do not
  // answer are named, as MPI's timeouts name them.
  std::string explain_failure(const char* what, std::size_t count, const std::string& gloo_error) {
    const std::string where = comm_messages::where(rank_, size_, what, count);
    if (failed_) {
      return where + ": an earlier collective failed, so this communicator cannot be used";
    }
    failed_ = true;
    const bool timed_out = gloo_error.empty() || gloo_error.find("Timed out") == 0;
    std::string message;
    if (!timed_out) {
      const std::vector<int> gone = watch_->gone_ranks(2.0);
      if (!gone.empty()) {
        message = where + " failed: " + watch_->describe(gone) +
                  (gone.size() == 1 ? " is" : " are") +
                  " gone: its connections closed without a word (the process ended: killed, "
                  "crashed, or stopped by an error of its own; see its log)";
      }
    }
    if (message.empty()) {
      const double asked_seconds = std::min(timeout_seconds_, 5.0);
      const std::vector<int> silent = watch_->silent_ranks(asked_seconds);
      const std::string named = silent.empty() ? "" : watch_->describe(silent);
      if (timed_out) {
        message = comm_messages::timeout_after_asking(where, timeout_seconds_, named,
                                                      asked_seconds);
      } else if (!named.empty()) {
        std::ostringstream asked;
        asked << asked_seconds;
        message = where + " failed (" + gloo_error + "): " + named + " did not answer within " +
                  asked.str() +
                  " s (dead, stopped, or cut off from this rank's network; raise "
                  "--collective_timeout if it is just slow)";
      } else {
        message = where + " failed in Gloo: " + gloo_error;
      }
    }
    // So that the others do not take this rank's exit for the cause.
    watch_->say_goodbye();
    return message;
  }

  int rank_;
  int size_;
  double timeout_seconds_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<OperationQueue> queue_;
  std::unique_ptr<GlooPeerWatch> watch_;
  std::thread thread_;
  uint32_t next_tag_ = 0;
  bool failed_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_gloo_communicator(const ProcessGroup& group,
                                                     double timeout_seconds) {
  return std::make_unique<GlooCommunicator>(group, timeout_seconds);
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_GLOO

// GlooPeerWatch: questions, answers and goodbyes on a context of their own.
#ifdef XTRAIN_HAVE_GLOO

#include "comm/gloo_peer_watch.hpp"

#include <gloo/common/error.h>

#include <chrono>
#include <exception>

namespace xtrain {
namespace {

// Every message goes to one slot, read by one receive from any peer at a
// time; the sentinels' slot never carries anything.
constexpr uint64_t kInboxSlot = 1;
constexpr uint64_t kSentinelSlot = 2;
// "For ever": the answering thread is woken by abortWaitRecv, never by a
// timeout, which would make Gloo close every connection of the context.
constexpr auto kForever = std::chrono::hours(24 * 365);

}  // namespace

GlooPeerWatch::GlooPeerWatch(std::shared_ptr<gloo::Context> context,
                             std::vector<std::string> hosts)
    : context_(std::move(context)),
      hosts_(std::move(hosts)),
      sentinel_values_(static_cast<std::size_t>(context_->size), 0),
      sentinels_(static_cast<std::size_t>(context_->size)),
      answered_(static_cast<std::size_t>(context_->size), false),
      said_goodbye_(static_cast<std::size_t>(context_->size), false) {
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer != context_->rank) peers_.push_back(peer);
  }
  question_buffer_ = context_->createUnboundBuffer(&question_, sizeof(int));
  answer_buffer_ = context_->createUnboundBuffer(&answer_, sizeof(int));
  goodbye_buffer_ = context_->createUnboundBuffer(&goodbye_, sizeof(int));
  for (int peer : peers_) {
    const auto p = static_cast<std::size_t>(peer);
    sentinels_[p] = context_->createUnboundBuffer(&sentinel_values_[p], sizeof(int));
    sentinels_[p]->recv(peer, kSentinelSlot);
  }
  post_inbox_receive();
  answerer_ = std::thread([this] { answer_messages(); });
}

GlooPeerWatch::~GlooPeerWatch() {
  {
    // Under the lock: the answering thread replaces inbox_ only under it.
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    inbox_->abortWaitRecv();
  }
  answerer_.join();
}

// A fresh buffer when the old one failed (a peer's connection closed while
// its message was on the way): a buffer keeps its failure for ever.
void GlooPeerWatch::post_inbox_receive() {
  inbox_ = context_->createUnboundBuffer(&inbox_value_, sizeof(int));
  inbox_->recv(peers_, kInboxSlot);
}

void GlooPeerWatch::answer_messages() {
  for (;;) {
    int source = -1;
    bool received = false;
    try {
      received = inbox_->waitRecv(&source, kForever);
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      try {
        post_inbox_receive();
      } catch (const std::exception&) {
        return;  // the context is unusable: nothing more to answer
      }
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!received || stopping_) return;
    }
    const int message = inbox_value_;
    try {
      inbox_->recv(peers_, kInboxSlot);
    } catch (const std::exception&) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      try {
        post_inbox_receive();
      } catch (const std::exception&) {
        return;
      }
    }
    if (source < 0 || source >= context_->size) continue;
    const auto from = static_cast<std::size_t>(source);
    if (message == kQuestion) {
      send(kAnswer, source);
    } else {
      std::lock_guard<std::mutex> lock(mutex_);
      if (message == kAnswer) answered_[from] = true;
      if (message == kGoodbye) said_goodbye_[from] = true;
      changed_.notify_all();
    }
  }
}

void GlooPeerWatch::send(Message message, int peer) {
  gloo::transport::UnboundBuffer* buffer = message == kQuestion ? question_buffer_.get()
                                           : message == kAnswer ? answer_buffer_.get()
                                                                : goodbye_buffer_.get();
  try {
    buffer->send(peer, kInboxSlot);
  } catch (const std::exception&) {
    // Its connection is closed: connection_closed() says so.
  }
}

// A receive that nobody sends to fails only when the peer's connection
// closes. Asked without waiting: abortWaitRecv makes waitRecv return at
// once, after it has checked for a failure.
bool GlooPeerWatch::connection_closed(int peer) {
  gloo::transport::UnboundBuffer& sentinel = *sentinels_[static_cast<std::size_t>(peer)];
  sentinel.abortWaitRecv();
  try {
    sentinel.waitRecv(nullptr, kForever);
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

std::vector<int> GlooPeerWatch::gone_ranks(double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::duration<double>(seconds));
  for (;;) {
    std::vector<int> gone;
    for (int peer : peers_) {
      if (!connection_closed(peer)) continue;
      // A goodbye arrives before the closure that follows it.
      std::lock_guard<std::mutex> lock(mutex_);
      if (!said_goodbye_[static_cast<std::size_t>(peer)]) gone.push_back(peer);
    }
    if (!gone.empty() || std::chrono::steady_clock::now() >= deadline) return gone;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::vector<int> GlooPeerWatch::silent_ranks(double seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    answered_.assign(answered_.size(), false);
  }
  for (int peer : peers_) send(kQuestion, peer);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::duration<double>(seconds));
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, deadline, [&] {
    for (int peer : peers_) {
      if (!answered_[static_cast<std::size_t>(peer)]) return false;
    }
    return true;
  });
  std::vector<int> silent;
  for (int peer : peers_) {
    if (!answered_[static_cast<std::size_t>(peer)]) silent.push_back(peer);
  }
  return silent;
}

void GlooPeerWatch::say_goodbye() {
  for (int peer : peers_) send(kGoodbye, peer);
}

std::string GlooPeerWatch::describe(const std::vector<int>& ranks) const {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]) + " (host " + hosts_[static_cast<std::size_t>(ranks[i])] + ")";
  }
  return text;
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_GLOO

// Who is lost when a Gloo collective fails: a context of its own (apart
// from the training's, which Gloo closes on any failure) over which every
// rank
//   - answers "are you there?" on a thread of its own, whatever its training
//     thread is doing (MPI's probe can answer only while it polls);
//   - keeps a receive posted from every peer that nobody ever sends to: when
//     a peer's process ends, the kernel closes its connections and that
//     receive fails, so a killed rank is known at once, by rank;
//   - says goodbye to every peer before it leaves after a failure of its
//     own, so that the others do not take its departure for the cause.
// A killed rank is then "gone" (its connection closed without a goodbye),
// a cut-off or stopped one "silent" (no answer), and the ranks that left
// because of it are neither.
//
// Defined only in builds with Gloo (XTRAIN_HAVE_GLOO).
#pragma once
#ifdef XTRAIN_HAVE_GLOO

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace xtrain {

class GlooPeerWatch {
 public:
  // `context`: fully connected, used by nothing else; `hosts`: every rank's
  // host name, for the messages.
  GlooPeerWatch(std::shared_ptr<gloo::Context> context, std::vector<std::string> hosts);
  // Stops answering. (A failed job leaks its watch instead, so that it
  // answers the peers still asking until the process exits.)
  ~GlooPeerWatch();
  GlooPeerWatch(const GlooPeerWatch&) = delete;
  GlooPeerWatch& operator=(const GlooPeerWatch&) = delete;

  // The peers whose connection has closed without a goodbye, waiting up to
  // `seconds` for one (the closure of a killed rank's connections reaches
  // this context a moment after the training's).
  std::vector<int> gone_ranks(double seconds);
  // Asks every other peer and waits up to `seconds` for the answers; the
  // peers that did not answer (gone ones included).
  std::vector<int> silent_ranks(double seconds);
  // Tells every peer that this rank leaves after a failure of its own.
  void say_goodbye();
  // "rank 2 (host n2)", "ranks 0 (host n0) and 2 (host n2)".
  std::string describe(const std::vector<int>& ranks) const;

 private:
  enum Message : int { kQuestion = 1, kAnswer = 2, kGoodbye = 3 };
  void answer_messages();
  void post_inbox_receive();
  bool connection_closed(int peer);
  void send(Message message, int peer);

  std::shared_ptr<gloo::Context> context_;
  std::vector<std::string> hosts_;
  std::vector<int> peers_;
  // Sent as they are, never written after construction.
  int question_ = kQuestion, answer_ = kAnswer, goodbye_ = kGoodbye;
  std::unique_ptr<gloo::transport::UnboundBuffer> question_buffer_, answer_buffer_,
      goodbye_buffer_;
  int inbox_value_ = 0;
  std::unique_ptr<gloo::transport::UnboundBuffer> inbox_;
  std::vector<int> sentinel_values_;
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sentinels_;  // per rank
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> answered_, said_goodbye_;
  bool stopping_ = false;
  std::thread answerer_;
};

}  // namespace xtrain

#endif  // XTRAIN_HAVE_GLOO

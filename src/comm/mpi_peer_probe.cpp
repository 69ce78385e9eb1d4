// MpiPeerProbe: questions and answers on a communicator of their own, so
// they never match the training's collectives.
#ifdef XTRAIN_HAVE_MPI

#include "comm/mpi_peer_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>

#include "comm/poll_until_done.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

constexpr int kQuestionTag = 1;
constexpr int kAnswerTag = 2;
// What is sent either way; the content does not matter.
const int kHere = 1;
constexpr std::size_t kHostChars = 64;

void wait_or_throw(MPI_Request& request, double timeout_seconds, const char* what) {
  const bool done = poll_until_done(timeout_seconds, [&] {
    int finished = 0;
    XTRAIN_CHECK(MPI_Test(&request, &finished, MPI_STATUS_IGNORE) == MPI_SUCCESS,
                 "MPI failed while ", what);
    return finished != 0;
  });
  XTRAIN_CHECK(done, what, " did not finish within ", timeout_seconds,
               " s: another rank died or hangs (raise --collective_timeout if it is just slow)");
}

}  // namespace

MpiPeerProbe::MpiPeerProbe(MPI_Comm world, int rank, int size, double timeout_seconds)
    : rank_(rank), size_(size), hosts_(static_cast<std::size_t>(size)) {
  MPI_Request request = MPI_REQUEST_NULL;
  XTRAIN_CHECK(MPI_Comm_idup(world, &comm_, &request) == MPI_SUCCESS,
               "MPI could not make the liveness communicator");
  wait_or_throw(request, timeout_seconds, "the exchange of host names");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  // Every rank's host name, for messages that name a lost rank's node.
  std::array<char, kHostChars> mine{};
  if (::gethostname(mine.data(), mine.size() - 1) != 0) mine = {'?'};
  std::vector<char> all(kHostChars * static_cast<std::size_t>(size));
  XTRAIN_CHECK(MPI_Iallgather(mine.data(), static_cast<int>(kHostChars), MPI_CHAR, all.data(),
                              static_cast<int>(kHostChars), MPI_CHAR, comm_,
                              &request) == MPI_SUCCESS,
               "MPI could not start the exchange of host names");
  wait_or_throw(request, timeout_seconds, "the exchange of host names");
  for (int r = 0; r < size; ++r) {
    const char* name = all.data() + kHostChars * static_cast<std::size_t>(r);
    hosts_[static_cast<std::size_t>(r)] = std::string(name, strnlen(name, kHostChars));
  }
  post_question_receive();
}

MpiPeerProbe::~MpiPeerProbe() {
  if (abandoned_ || comm_ == MPI_COMM_NULL) return;
  if (question_request_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&question_request_);
    MPI_Wait(&question_request_, MPI_STATUS_IGNORE);
  }
  MPI_Comm_free(&comm_);
}

void MpiPeerProbe::post_question_receive() {
  if (MPI_Irecv(&question_, 1, MPI_INT, MPI_ANY_SOURCE, kQuestionTag, comm_,
                &question_request_) != MPI_SUCCESS) {
    question_request_ = MPI_REQUEST_NULL;  // no answers from this rank, then
  }
}

void MpiPeerProbe::answer() {
  while (question_request_ != MPI_REQUEST_NULL) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Test(&question_request_, &arrived, &status) != MPI_SUCCESS || !arrived) return;
    MPI_Request send = MPI_REQUEST_NULL;
    // The answer's buffer is a constant: the request can be let go at once.
    if (MPI_Isend(&kHere, 1, MPI_INT, status.MPI_SOURCE, kAnswerTag, comm_, &send) ==
        MPI_SUCCESS) {
      MPI_Request_free(&send);
    }
    post_question_receive();
  }
}

std::vector<int> MpiPeerProbe::silent_ranks(double seconds) {
  abandon();  // whatever happens, the requests below may never complete
  std::vector<int> answers(static_cast<std::size_t>(size_), 0);
  std::vector<MPI_Request> receives(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request send = MPI_REQUEST_NULL;
    if (MPI_Isend(&kHere, 1, MPI_INT, peer, kQuestionTag, comm_, &send) == MPI_SUCCESS) {
      MPI_Request_free(&send);
    }
    MPI_Irecv(&answers[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, kAnswerTag, comm_,
              &receives[static_cast<std::size_t>(peer)]);
  }
  std::vector<bool> answered(static_cast<std::size_t>(size_), false);
  answered[static_cast<std::size_t>(rank_)] = true;
  poll_until_done(seconds, [&] {
    answer();
    bool all = true;
    for (int peer = 0; peer < size_; ++peer) {
      const auto p = static_cast<std::size_t>(peer);
      if (answered[p] || receives[p] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&receives[p], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
        answered[p] = true;
      } else {
        all = false;
      }
    }
    return all;
  });
  std::vector<int> silent;
  for (int peer = 0; peer < size_; ++peer) {
    if (!answered[static_cast<std::size_t>(peer)]) silent.push_back(peer);
  }
  return silent;
}

std::string MpiPeerProbe::describe(const std::vector<int>& ranks) const {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) text += i + 1 == ranks.size() ? " and " : ", ";
    text += std::to_string(ranks[i]) + " (host " + host(ranks[i]) + ")";
  }
  return text;
}

}  // namespace xtrain

#endif  // XTRAIN_HAVE_MPI

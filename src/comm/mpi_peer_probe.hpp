// Who is still there after a collective missed its deadline: every rank
// keeps a receive posted for "are you there?" messages on a communicator of
// their own and answers them whenever it polls a collective; a rank whose
// collective timed out asks every other rank and names those that do not
// answer, with their host names (gathered when the job formed). A collective
// that hangs says nothing about which rank is missing: a ring or tree sum
// stalls on every rank alike.
#pragma once
#ifdef XTRAIN_HAVE_MPI

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <string>
#include <vector>

namespace xtrain {

class MpiPeerProbe {
 public:
  // Collective over `world` (duplicates it): every rank constructs one.
  // Takes at most timeout_seconds; throws xtrain::Error past it.
  MpiPeerProbe(MPI_Comm world, int rank, int size, double timeout_seconds);
  ~MpiPeerProbe();
  MpiPeerProbe(const MpiPeerProbe&) = delete;
  MpiPeerProbe& operator=(const MpiPeerProbe&) = delete;

  // Answers the questions that have arrived; cheap (one MPI_Test). Called
  // from every poll of a pending collective.
  void answer();
  // Asks every other rank and waits up to `seconds` for the answers (while
  // answering the others' questions); the ranks that did not answer.
  std::vector<int> silent_ranks(double seconds);
  // "rank 2 (host n2)", "ranks 0 (host n0) and 2 (host n2)".
  std::string describe(const std::vector<int>& ranks) const;
  const std::string& host(int rank) const { return hosts_[static_cast<std::size_t>(rank)]; }
  // After a failure: the pending requests are left to MPI_Abort.
  void abandon() { abandoned_ = true; }

 private:
  void post_question_receive();

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_;
  int size_;
  std::vector<std::string> hosts_;
  int question_ = 0;
  MPI_Request question_request_ = MPI_REQUEST_NULL;
  std::vector<int> answer_buffer_;  // one slot per rank we answer
  std::vector<MPI_Request> answer_sends_;
  bool abandoned_ = false;
};

}  // namespace xtrain

#endif  // XTRAIN_HAVE_MPI

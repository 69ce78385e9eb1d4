// The wording of collective errors, shared by the communicator backends so
// that a timeout reads the same whichever backend (MPI, NCCL) hit it:
//   "rank 0 of 2: allreduce of 431,080 values did not finish within 30 s: ..."
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

namespace xtrain::comm_messages {

// 431080 -> "431,080": counts in messages are read by people.
inline std::string with_thousands(std::size_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3) digits.insert(at, ",");
  return digits;
}

// "rank 0 of 2: allreduce of 431,080 values" (no count part when count is 0).
inline std::string where(int rank, int size, const char* what, std::size_t count) {
  std::string text = "rank " + std::to_string(rank) + " of " + std::to_string(size) + ": " + what;
  if (count > 0) text += " of " + with_thousands(count) + " values";
  return text;
}

// The message of a collective that missed its deadline; `where_text` as above.
inline std::string timeout(const std::string& where_text, double timeout_seconds) {
  std::ostringstream seconds;
  seconds << timeout_seconds;
  return where_text + " did not finish within " + seconds.str() +
         " s: another rank died or hangs (raise --collective_timeout if it is just slow)";
}

// The same, once the rank has asked the others whether they are there:
// `silent` names those that did not answer within `asked_seconds` ("rank 2
// (host n2)"), or is empty when every rank answered.
inline std::string timeout_after_asking(const std::string& where_text, double timeout_seconds,
                                        const std::string& silent, double asked_seconds) {
  std::ostringstream seconds, asked;
  seconds << timeout_seconds;
  asked << asked_seconds;
  if (silent.empty()) {
    return where_text + " did not finish within " + seconds.str() +
           " s, though every other rank answers: the network is slow or a rank is busy "
           "outside the exchange (raise --collective_timeout if it is just slow)";
  }
  return where_text + " did not finish within " + seconds.str() +
         " s: another rank died or hangs: " + silent + " did not answer within " + asked.str() +
         " s (dead, stopped, or cut off from this rank's network; raise --collective_timeout "
         "if it is just slow)";
}

}  // namespace xtrain::comm_messages

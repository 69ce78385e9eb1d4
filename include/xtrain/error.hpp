// Errors: what the library throws instead of exiting.
//
// Two kinds of check, as in PyTorch's c10:
//  - XTRAIN_CHECK(cond, parts...) is for the user's input (a prototxt, a
//    database, a flag). It throws xtrain::Error whose message tells the user
//    what was wrong, where, and what to change.
//  - XTRAIN_ASSERT(cond, parts...) is for invariants of our own code. If it
//    fails it is a bug in xtrain; it still throws (a linking application can
//    catch it) but the message says so and names the source line.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "xtrain/export.hpp"

namespace xtrain {

class XTRAIN_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What XTRAIN_ASSERT throws: still an Error, so a caller's catch works, but
// one that is a bug in xtrain rather than in the input (the fuzz targets
// tell the two apart by it). Code that adds context by throwing a new Error
// with the message of a caught one turns it into a plain Error.
class XTRAIN_API InternalError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
[[noreturn]] XTRAIN_API void throw_internal_error(const char* file, int line, const char* condition,
                                                  const std::string& message);
}  // namespace detail

}  // namespace xtrain

#define XTRAIN_CHECK(condition, ...)                                \
  do {                                                              \
    if (!(condition)) {                                             \
      throw ::xtrain::Error(::xtrain::detail::concat(__VA_ARGS__)); \
    }                                                               \
  } while (0)

// XTRAIN_ASSERT(condition) or XTRAIN_ASSERT(condition, message parts...).
// The "" appended gives the inner macro's "..." an argument even without a
// message (C++17 requires one; __VA_OPT__ is C++20).
#define XTRAIN_ASSERT(...) XTRAIN_ASSERT_WITH_MESSAGE(__VA_ARGS__, "")
#define XTRAIN_ASSERT_WITH_MESSAGE(condition, ...)                                   \
  do {                                                                               \
    if (!(condition)) {                                                              \
      ::xtrain::detail::throw_internal_error(__FILE__, __LINE__, #condition,         \
                                             ::xtrain::detail::concat(__VA_ARGS__)); \
    }                                                                                \
  } while (0)

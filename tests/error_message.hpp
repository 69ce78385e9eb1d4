// The message of the xtrain::Error an action throws, for tests that check
// what a user is told; "(no error)" if it throws none (so that a check for
// words of the message fails, naming what happened instead).
#pragma once

#include <functional>
#include <string>

#include "xtrain/error.hpp"

namespace xtrain::testing {

inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace xtrain::testing

// Checks of what a user is told: the message of the xtrain::Error an action
// throws, and an expectation that it names given words.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::testing {

// "(no error)" if `action` throws none (so that a check for words of the
// message fails, naming what happened instead).
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

// Expects `call` (a lambda or a std::function) to throw xtrain::Error whose
// message names every one of `parts`.
template <typename Call>
void expect_error(Call&& call, const std::vector<std::string>& parts) {
  try {
    call();
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const std::string& part : parts) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "the message does not mention \"" << part << "\": " << message;
    }
    return;
  }
  ADD_FAILURE() << "expected an xtrain::Error";
}

}  // namespace xtrain::testing

// XTRAIN_CHECK (bad input: an xtrain::Error with the message) and
// XTRAIN_ASSERT (a broken invariant: an xtrain::InternalError naming the
// file, the line and the condition), with and without a message.
#include <gtest/gtest.h>

#include <string>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::string internal_error_of(void (*action)()) {
  try {
    action();
  } catch (const InternalError& error) {
    return error.what();
  }
  return "(no internal error)";
}

TEST(ErrorMacros, CheckThrowsTheMessageItIsGiven) {
  const int batch = 0;
  try {
    XTRAIN_CHECK(batch > 0, "batch_size must be positive, got ", batch);
    FAIL() << "no error";
  } catch (const InternalError&) {
    FAIL() << "a check is not an internal error";
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "batch_size must be positive, got 0");
  }
  XTRAIN_CHECK(batch == 0, "not thrown");
}

TEST(ErrorMacros, AssertWithoutAMessageNamesTheCondition) {
  const std::string message = internal_error_of([] { XTRAIN_ASSERT(1 + 1 == 3); });
  EXPECT_NE(message.find("internal error (a bug in xtrain"), std::string::npos) << message;
  EXPECT_NE(message.find("error_macros_test.cpp:"), std::string::npos) << message;
  EXPECT_NE(message.find(": 1 + 1 == 3 failed"), std::string::npos) << message;
  EXPECT_EQ(message.back(), 'd') << "no ': ' and empty message after 'failed': " << message;
}

TEST(ErrorMacros, AssertWithAMessageAddsIt) {
  const std::string message =
      internal_error_of([] { XTRAIN_ASSERT(2 < 1, "the count is ", 7, " of ", 5); });
  EXPECT_NE(message.find(": 2 < 1 failed: the count is 7 of 5"), std::string::npos) << message;
  EXPECT_EQ(internal_error_of([] { XTRAIN_ASSERT(true, "unused"); }), "(no internal error)");
}

}  // namespace
}  // namespace xtrain

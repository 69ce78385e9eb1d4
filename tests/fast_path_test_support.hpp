// Helpers for the tests that hold a layer's fast CPU path against the plain
// reference loops it replaced: closeness within float tolerance, and running
// a check at one thread and at two to see that results do not depend on the
// thread count.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "xtrain/cpu_threads.hpp"

namespace xtrain::testing {

// |actual - expected| <= tolerance * max(1, |expected|) for every element.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                         float tolerance, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const float bound = tolerance * std::max(1.0f, std::fabs(expected[i]));
    ASSERT_NEAR(actual[i], expected[i], bound) << what << ", element " << i;
  }
}

// The results of `run` with one thread and with two must be bit for bit the
// same; the pool is restored to its default afterwards.
inline void expect_same_for_thread_counts(const std::function<std::vector<float>()>& run) {
  set_cpu_threads(1);
  const std::vector<float> one = run();
  set_cpu_threads(2);
  const std::vector<float> two = run();
  set_cpu_threads(0);
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    ASSERT_EQ(one[i], two[i]) << "element " << i << " differs between 1 and 2 threads";
  }
}

}  // namespace xtrain::testing

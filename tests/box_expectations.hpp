// A check of detection boxes shared by the box tests.
#pragma once

#include <gtest/gtest.h>

#include "layers/normalized_box.hpp"

namespace xtrain::testing {

// Each corner of `got` within 1e-6 of `want`'s.
inline void expect_near_box(const detection::NormalizedBox& got,
                            const detection::NormalizedBox& want) {
  EXPECT_NEAR(got.xmin, want.xmin, 1e-6f);
  EXPECT_NEAR(got.ymin, want.ymin, 1e-6f);
  EXPECT_NEAR(got.xmax, want.xmax, 1e-6f);
  EXPECT_NEAR(got.ymax, want.ymax, 1e-6f);
}

}  // namespace xtrain::testing

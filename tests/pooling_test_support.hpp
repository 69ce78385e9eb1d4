// What the pooling kernel tests share: the geometry of a test case, random
// inputs that reach every MAX rule (ties, -inf, NaN, windows with nothing
// above -FLT_MAX), and a bitwise comparison in which any NaN equals any NaN.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "layers/pooling_kernels.hpp"

namespace xtrain::testing {

// A kernel, pad and stride on a stack of planes, with Caffe's output size
// (round_mode CEIL, or FLOOR when not `round_up`); `global` makes the
// kernel the whole plane.
inline PoolingGeometry pooling_geometry(int planes, int height, int width, int kernel_h,
                                        int kernel_w, int pad_h, int pad_w, int stride_h,
                                        int stride_w, bool global, bool round_up = true) {
  PoolingGeometry g;
  g.planes = planes;
  g.height = height;
  g.width = width;
  g.kernel_h = global ? height : kernel_h;
  g.kernel_w = global ? width : kernel_w;
  g.pad_h = pad_h;
  g.pad_w = pad_w;
  g.stride_h = stride_h;
  g.stride_w = stride_w;
  const bool any_padding = pad_h > 0 || pad_w > 0;
  g.pooled_h = pooled_size(g.height, g.kernel_h, g.pad_h, g.stride_h, any_padding, round_up);
  g.pooled_w = pooled_size(g.width, g.kernel_w, g.pad_w, g.stride_w, any_padding, round_up);
  return g;
}

enum class PoolValues { kUniform, kFewIntegers, kWithInfinitiesAndNaN };

// `count` values of `kind`; with infinities, the first count / run_divisor
// are -inf too, a run wide enough to leave some windows with no value above
// -FLT_MAX (argmax -1).
inline std::vector<float> random_pool_values(std::size_t count, PoolValues kind, std::uint32_t seed,
                                             std::size_t run_divisor) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 2);
  std::vector<float> values(count);
  for (float& v : values) {
    switch (kind) {
      case PoolValues::kUniform:
        v = uniform(engine);
        break;
      case PoolValues::kFewIntegers:  // many ties: the first maximum must win
        v = static_cast<float>(small(engine));
        break;
      case PoolValues::kWithInfinitiesAndNaN: {
        const int pick = small(engine);
        v = pick == 0   ? -std::numeric_limits<float>::infinity()
            : pick == 1 ? std::numeric_limits<float>::quiet_NaN()
                        : uniform(engine);
        break;
      }
    }
  }
  if (kind == PoolValues::kWithInfinitiesAndNaN) {
    for (std::size_t i = 0; i < count / run_divisor; ++i) {
      values[i] = -std::numeric_limits<float>::infinity();
    }
  }
  return values;
}

// Equal as bit patterns, except that any NaN equals any NaN.
inline void expect_same_bits_or_nan(const std::vector<float>& actual,
                                    const std::vector<float>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const bool both_nan = std::isnan(actual[i]) && std::isnan(expected[i]);
    ASSERT_TRUE(both_nan || std::memcmp(&actual[i], &expected[i], sizeof(float)) == 0)
        << what << " differs at (plain) index " << i << ": " << actual[i] << ", expected "
        << expected[i];
  }
}

}  // namespace xtrain::testing

// The LRN arithmetic the CPU and GPU kernels share (layers/lrn_math.hpp):
// the per-value window sum the GPU computes, one thread per value, against the
// CPU's row and column sweeps (lrn_window_sum), bit for bit; and the
// per-value formulas against Caffe's, written out.
#include "layers/lrn_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "layers/lrn_steps.hpp"

namespace xtrain {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(LrnMathTest, WindowSumAtEachValueIsTheSweepsSumBitForBit) {
  std::mt19937 generator(7);
  std::uniform_real_distribution<float> values(-3.0f, 3.0f);
  struct Case {
    int height, width, radius;
  };
  // Odd and even sizes, radius 0, a radius as large as and larger than the
  // plane, one row, one column.
  for (const Case c : {Case{5, 7, 1}, Case{6, 6, 2}, Case{3, 3, 3}, Case{4, 9, 5}, Case{1, 8, 2},
                       Case{8, 1, 2}, Case{7, 5, 0}, Case{13, 11, 4}}) {
    const int count = c.height * c.width;
    std::vector<float> plane(count), rows(count), swept(count);
    for (float& v : plane) v = values(generator);
    lrn_window_sum(plane.data(), c.height, c.width, c.radius, rows.data(), swept.data());
    for (int y = 0; y < c.height; ++y) {
      for (int x = 0; x < c.width; ++x) {
        const float at = lrn_math::window_sum_at(plane.data(), c.height, c.width, c.radius, y, x);
        EXPECT_TRUE(same_bits(at, swept[y * c.width + x]))
            << c.height << "x" << c.width << " radius " << c.radius << " at (" << y << ", " << x
            << "): " << at << " vs " << swept[y * c.width + x];
      }
    }
  }
}

TEST(LrnMathTest, PerValueFormulasAreCaffes) {
  EXPECT_FLOAT_EQ(lrn_math::power_three_quarters(16.0f), 0.125f);  // 16^-0.75 = 1/8
  EXPECT_FLOAT_EQ(lrn_math::power(4.0f, 0.5f), 0.5f);
  // 1 + alpha * sum / n^2
  EXPECT_FLOAT_EQ(lrn_math::within_channel_scale(18.0f, 0.5f, 9.0f), 2.0f);
  EXPECT_FLOAT_EQ(lrn_math::gradient_ratio(3.0f, 2.0f, 4.0f), 1.5f);
  EXPECT_FLOAT_EQ(lrn_math::subtract_window_term(10.0f, 0.5f, 2.0f, 3.0f), 7.0f);
}

}  // namespace
}  // namespace xtrain

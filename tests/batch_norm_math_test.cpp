// The BatchNorm arithmetic that the CPU loops and the CUDA kernels share
// (layers/batch_norm_math.hpp), against Caffe's formulas written out.
#include "layers/batch_norm_math.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace xtrain {
namespace {

TEST(BatchNormMathTest, RunningSumsAreCaffesWeightedSums) {
  // m = 4 values per channel: the stored variance is unbiased, * 4 / 3.
  const batch_norm::RunningSums sums{0.9f, batch_norm::RunningSums::correction_for(4)};
  EXPECT_FLOAT_EQ(sums.bias_correction, 4.0f / 3.0f);
  EXPECT_FLOAT_EQ(sums.weight(2.0f), 0.9f * 2.0f + 1.0f);
  EXPECT_FLOAT_EQ(sums.mean_sum(10.0f, 0.5f), 0.9f * 10.0f + 0.5f);
  EXPECT_FLOAT_EQ(sums.variance_sum(3.0f, 1.5f), 0.9f * 3.0f + 1.5f * 4.0f / 3.0f);
  // One value per channel: no correction (Caffe's m / (m - 1) would divide by 0).
  EXPECT_EQ(batch_norm::RunningSums::correction_for(1), 1.0f);
  EXPECT_EQ(batch_norm::RunningSums::correction_for(0), 1.0f);
}

TEST(BatchNormMathTest, StoredStatisticsDivideByTheWeightUnlessItIsZero) {
  EXPECT_EQ(batch_norm::stored_factor(0.0f), 0.0f);
  EXPECT_FLOAT_EQ(batch_norm::stored_factor(4.0f), 0.25f);
}

TEST(BatchNormMathTest, NormalizationAndGradients) {
  const float eps = 1e-5f;
  const float deviation = batch_norm::deviation(0.25f, eps);
  EXPECT_FLOAT_EQ(deviation, std::sqrt(0.25f + eps));
  EXPECT_FLOAT_EQ(batch_norm::normalize(3.0f, 1.0f, 2.0f), 1.0f);
  // dx = (dy - mean(dy) - y * mean(dy * y)) / deviation
  EXPECT_FLOAT_EQ(batch_norm::batch_gradient(1.0f, 0.5f, 0.25f, 0.5f, 2.0f),
                  (1.0f - 0.25f - 0.5f * 0.5f) / 2.0f);
  EXPECT_FLOAT_EQ(batch_norm::global_gradient(3.0f, 2.0f), 1.5f);
}

}  // namespace
}  // namespace xtrain

// The per-value functors that the CUDA kernels of the layers apply
// (src/layers/*_ops.hpp, src/layers/crop_geometry.hpp), checked on the CPU
// against plain formulas, branch by branch. The layer tests run most of them
// through the layers' CPU passes; these pin the branches that a layer test
// may not reach (ignored and invalid labels, ties, NaN, the Reduction terms
// that the CPU forward takes from BLAS instead).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "layers/crop_geometry.hpp"
#include "layers/eltwise_ops.hpp"
#include "layers/embed_ops.hpp"
#include "layers/loss_ops.hpp"
#include "layers/reduction_ops.hpp"
#include "layers/scale_ops.hpp"

namespace xtrain {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(LayerFunctorsTest, LabelRuleSortsLabelsIntoClassesIgnoredAndInvalid) {
  const ops::LabelRule rule{true, 255, 10};
  EXPECT_EQ(rule(3.0f), 3);
  EXPECT_EQ(rule(3.9f), 3);  // truncated, as Caffe does
  EXPECT_EQ(rule(0.0f), 0);
  EXPECT_EQ(rule(9.0f), 9);
  EXPECT_EQ(rule(255.0f), ops::kIgnoredLabel);
  EXPECT_EQ(rule(255.5f), ops::kIgnoredLabel);
  EXPECT_EQ(rule(10.0f), ops::kInvalidLabel);
  EXPECT_EQ(rule(-1.0f), ops::kInvalidLabel);
  EXPECT_EQ(rule(3e9f), ops::kInvalidLabel);
  EXPECT_EQ(rule(kNaN), ops::kInvalidLabel);
  const ops::LabelRule no_ignore{false, 5, 10};
  EXPECT_EQ(no_ignore(5.0f), 5);
  const ops::LabelRule negative_ignore{true, -1, 10};
  EXPECT_EQ(negative_ignore(-1.0f), ops::kIgnoredLabel);
}

TEST(LayerFunctorsTest, SoftmaxLossTermClampsAtFltMinAndKeepsNaN) {
  const ops::SoftmaxLossTerm term;
  EXPECT_DOUBLE_EQ(term(0.25f), -std::log(0.25));
  EXPECT_DOUBLE_EQ(term(0.0f), -std::log(static_cast<double>(FLT_MIN)));
  EXPECT_TRUE(std::isnan(term(kNaN)));
}

TEST(LayerFunctorsTest, SoftmaxLossGradientSubtractsOneAtTheLabelAndZeroesIgnored) {
  const ops::SoftmaxLossGradient gradient{0.5f};
  EXPECT_FLOAT_EQ(gradient(0.75f, 2, 2), (0.75f - 1.0f) * 0.5f);
  EXPECT_FLOAT_EQ(gradient(0.75f, 1, 2), 0.75f * 0.5f);
  EXPECT_EQ(gradient(0.75f, 1, ops::kIgnoredLabel), 0.0f);
}

TEST(LayerFunctorsTest, InTopKCountsTiesAgainstThePrediction) {
  const float scores[] = {0.1f, 0.5f, 0.5f, 0.2f};
  EXPECT_TRUE(ops::in_top_k(scores, 1, 4, 1, 2));   // only class 2 ties it
  EXPECT_FALSE(ops::in_top_k(scores, 1, 4, 1, 1));  // a tie is a miss at top 1
  EXPECT_FALSE(ops::in_top_k(scores, 1, 4, 3, 2));
  EXPECT_TRUE(ops::in_top_k(scores, 1, 4, 3, 3));
  // Strided: the classes of one position, `stride` values apart.
  const float strided[] = {0.9f, 0.0f, 0.1f, 0.0f, 0.3f, 0.0f};
  EXPECT_TRUE(ops::in_top_k(strided, 2, 3, 0, 1));
  EXPECT_FALSE(ops::in_top_k(strided, 2, 3, 1, 2));
}

TEST(LayerFunctorsTest, EltwiseFunctorsFollowCaffesFormulas) {
  EXPECT_FALSE(std::signbit(ops::EltwiseSumFirst{1.0f}(-0.0f)));  // 0 + -0 = +0
  EXPECT_FLOAT_EQ(ops::EltwiseSumFirst{2.0f}(3.0f), 6.0f);
  EXPECT_FLOAT_EQ(ops::EltwiseSumNext{-0.5f}(1.0f, 4.0f), -1.0f);
  EXPECT_FLOAT_EQ(ops::EltwiseProdGradientFromTop{}(6.0f, 2.0f, 0.5f), 1.5f);
  EXPECT_FALSE(ops::eltwise_max_takes(1.0f, 1.0f));  // ties keep the earlier winner
  EXPECT_TRUE(ops::eltwise_max_takes(2.0f, 1.0f));
  EXPECT_EQ(ops::EltwiseMaxGradient{2}(2, 3.0f), 3.0f);
  EXPECT_EQ(ops::EltwiseMaxGradient{2}(1, 3.0f), 0.0f);
  EXPECT_FLOAT_EQ(ops::ScaleShift{}(3.0f, 2.0f, -1.0f), 5.0f);
  EXPECT_FLOAT_EQ(ops::Difference{}(3.0f, 5.0f), -2.0f);
  EXPECT_FLOAT_EQ(ops::Multiply{}(3.0f, 5.0f), 15.0f);
  EXPECT_FLOAT_EQ(ops::ScaleBy{-2.0f}(1.5f), -3.0f);
}

TEST(LayerFunctorsTest, ReductionTermsAndGradientsPerKind) {
  using ops::ReductionKind;
  EXPECT_EQ(ops::ReductionTerm{ReductionKind::kSum}(-3.0f), -3.0f);
  EXPECT_EQ(ops::ReductionTerm{ReductionKind::kAbsoluteSum}(-3.0f), 3.0f);
  EXPECT_EQ(ops::ReductionTerm{ReductionKind::kSumOfSquares}(-3.0f), 9.0f);
  EXPECT_EQ(ops::ReductionGradient{ReductionKind::kSum}(-3.0f, 0.5f), 0.5f);
  EXPECT_EQ(ops::ReductionGradient{ReductionKind::kAbsoluteSum}(-3.0f, 0.5f), -0.5f);
  EXPECT_EQ(ops::ReductionGradient{ReductionKind::kAbsoluteSum}(0.0f, 0.5f), 0.0f);
  EXPECT_EQ(ops::ReductionGradient{ReductionKind::kSumOfSquares}(-3.0f, 0.5f), -3.0f);
}

TEST(LayerFunctorsTest, MvnFunctors) {
  EXPECT_FLOAT_EQ(ops::MvnSquare{}(-3.0f), 9.0f);
  EXPECT_FLOAT_EQ(ops::MvnStddev{0.5f}(4.0f), 2.5f);
  EXPECT_FLOAT_EQ(ops::Divide{}(3.0f, 4.0f), 0.75f);
  // (dy + (-1/D)(sum dy + y sum(dy y))) / sigma with D = 4
  EXPECT_FLOAT_EQ(ops::MvnGradient{-0.25f}(1.0f, 2.0f, 3.0f, 0.5f, 2.0f),
                  (1.0f - 0.25f * (3.0f + 2.0f * 0.5f)) / 2.0f);
}

TEST(LayerFunctorsTest, ArgmaxRanksByValueThenByLargerIndex) {
  EXPECT_TRUE(ops::argmax_ranks_before(2.0f, 0, 1.0f, 5));
  EXPECT_FALSE(ops::argmax_ranks_before(1.0f, 5, 2.0f, 0));
  EXPECT_TRUE(ops::argmax_ranks_before(1.0f, 5, 1.0f, 2));  // std::greater on pairs
  EXPECT_FALSE(ops::argmax_ranks_before(1.0f, 2, 1.0f, 5));
  EXPECT_FALSE(ops::argmax_ranks_before(1.0f, 2, 1.0f, 2));
}

TEST(LayerFunctorsTest, CropGeometryFindsEachTopLineInTheBottom) {
  // Bottom (2, 3, 4, 5), top (1, 2, 2, 3) at offsets (1, 1, 2, 1).
  const int bottom_shape[] = {2, 3, 4, 5};
  const int top_shape[] = {1, 2, 2, 3};
  const int offsets[] = {1, 1, 2, 1};
  CropGeometry geometry;
  geometry.axes = 4;
  geometry.strides[3] = 1;
  for (int a = 2; a >= 0; --a) geometry.strides[a] = geometry.strides[a + 1] * bottom_shape[a + 1];
  for (int a = 0; a < 4; ++a) {
    geometry.offsets[a] = offsets[a];
    geometry.top_shape[a] = top_shape[a];
  }
  EXPECT_EQ(geometry.line_length(), 3u);
  std::size_t line = 0;
  for (int c = 0; c < 2; ++c) {
    for (int h = 0; h < 2; ++h, ++line) {
      const std::size_t expected = ((1 * 3 + (c + 1)) * 4 + (h + 2)) * 5 + 1;
      EXPECT_EQ(geometry.line_start(line), expected) << "c " << c << " h " << h;
    }
  }
}

TEST(LayerFunctorsTest, EmbedIndexRule) {
  EXPECT_TRUE(ops::embed_index_valid(0.0f, 4));
  EXPECT_TRUE(ops::embed_index_valid(3.0f, 4));
  EXPECT_FALSE(ops::embed_index_valid(4.0f, 4));
  EXPECT_FALSE(ops::embed_index_valid(-1.0f, 4));
  EXPECT_FALSE(ops::embed_index_valid(1.5f, 4));
  EXPECT_FALSE(ops::embed_index_valid(kNaN, 4));
}

TEST(LayerFunctorsTest, SigmoidCrossEntropyTermIsTheLogLikelihood) {
  // -term = -(t ln p + (1 - t) ln(1 - p)) with p = sigmoid(x), for either sign of x.
  for (const float x : {-3.0f, -0.5f, 0.0f, 0.7f, 4.0f}) {
    for (const float t : {0.0f, 0.25f, 1.0f}) {
      const double p = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
      const double expected = t * std::log(p) + (1 - t) * std::log(1 - p);
      EXPECT_NEAR(ops::SigmoidCrossEntropyTerm{}(x, t), expected, 1e-5) << x << " " << t;
    }
  }
  EXPECT_FLOAT_EQ(ops::SigmoidCrossEntropyGradient{2.0f}(0.75f, 1.0f, false), -0.5f);
  EXPECT_EQ(ops::SigmoidCrossEntropyGradient{2.0f}(0.75f, 1.0f, true), 0.0f);
  EXPECT_TRUE(ops::sigmoid_target_valid(1.0f));
  EXPECT_FALSE(ops::sigmoid_target_valid(1.5f));
  EXPECT_FALSE(ops::sigmoid_target_valid(kNaN));
  EXPECT_TRUE(ops::truncates_to(-1.5f, -1));
  EXPECT_FALSE(ops::truncates_to(3e9f, 0));
}

TEST(LayerFunctorsTest, HingeMarginsAndGradients) {
  EXPECT_FLOAT_EQ(ops::HingeMargin{}(0.5f, false), 1.5f);
  EXPECT_FLOAT_EQ(ops::HingeMargin{}(0.5f, true), 0.5f);
  EXPECT_EQ(ops::HingeMargin{}(-2.0f, false), 0.0f);
  EXPECT_EQ(ops::HingeMargin{}(kNaN, false), 0.0f);  // std::max(0, NaN) = 0
  EXPECT_FLOAT_EQ((ops::HingeGradient{0.5f, true}(3.0f, false)), 1.5f);
  EXPECT_FLOAT_EQ((ops::HingeGradient{0.5f, true}(3.0f, true)), -1.5f);
  EXPECT_FLOAT_EQ((ops::HingeGradient{0.5f, false}(3.0f, true)), -0.5f);
  EXPECT_EQ((ops::HingeGradient{0.5f, false}(0.0f, false)), 0.0f);
}

TEST(LayerFunctorsTest, MultinomialLogisticAndInfogainClampAt1e20) {
  EXPECT_FLOAT_EQ(ops::MultinomialLogisticTerm{}(0.5f), std::log(0.5f));
  EXPECT_FLOAT_EQ(ops::MultinomialLogisticTerm{}(0.0f), std::log(1e-20f));
  EXPECT_FLOAT_EQ(ops::MultinomialLogisticGradient{-2.0f}(0.5f), -4.0f);
  EXPECT_FLOAT_EQ(ops::MultinomialLogisticGradient{-1.0f}(0.0f), -1e20f);
  EXPECT_FLOAT_EQ(ops::InfogainTerm{}(2.0f, 0.5f), 2.0f * std::log(0.5f));
  EXPECT_FLOAT_EQ(ops::InfogainTerm{}(2.0f, 0.0f), 2.0f * std::log(1e-20f));
  EXPECT_FLOAT_EQ(ops::InfogainGradient{}(0.5f, 3.0f, 1.0f), 0.5f);
}

TEST(LayerFunctorsTest, ContrastiveTermsAndGradientScalesPerBranch) {
  const ops::ContrastiveTerm modern{2.0f, false};
  const ops::ContrastiveTerm legacy{2.0f, true};
  EXPECT_FLOAT_EQ(modern(1.5f, true), 1.5f);
  EXPECT_FLOAT_EQ(modern(1.0f, false), 1.0f);  // (2 - 1)^2
  EXPECT_EQ(modern(9.0f, false), 0.0f);
  EXPECT_FLOAT_EQ(legacy(1.5f, false), 0.5f);
  EXPECT_EQ(legacy(3.0f, false), 0.0f);
  const ops::ContrastiveGradientScale modern_scale{2.0f, false, 0.5f};
  const ops::ContrastiveGradientScale legacy_scale{2.0f, true, 0.5f};
  EXPECT_FLOAT_EQ(modern_scale(4.0f, true), 0.5f);
  EXPECT_FLOAT_EQ(modern_scale(1.0f, false), -0.5f * 1.0f / (1.0f + 1e-4f));
  EXPECT_EQ(modern_scale(9.0f, false), 0.0f);
  EXPECT_FLOAT_EQ(legacy_scale(1.0f, false), -0.5f);
  EXPECT_EQ(legacy_scale(3.0f, false), 0.0f);
  EXPECT_TRUE(ops::contrastive_similar(1.0f));
  EXPECT_FALSE(ops::contrastive_similar(0.5f));  // truncates to 0
}

}  // namespace
}  // namespace xtrain

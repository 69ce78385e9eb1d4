// The detection layers' shared math, by hand: box coding against a prior,
// non-maximum suppression, prior-to-box matching and mining, and average
// precision (11-point, MaxIntegral, Integral) on a hand-made ranking.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "box_expectations.hpp"
#include "layer_test_support.hpp"
#include "layers/average_precision.hpp"
#include "layers/box_coding.hpp"
#include "layers/multibox_matching.hpp"
#include "layers/non_maximum_suppression.hpp"

namespace xtrain::detection {
namespace {

using testing::expect_near_box;
const NormalizedBox kPrior{0.2f, 0.2f, 0.6f, 0.6f};
const NormalizedBox kBox{0.3f, 0.2f, 0.5f, 0.8f};
const BoxVariance kVariance{{0.1f, 0.1f, 0.2f, 0.2f}};

void expect_offsets(const BoxOffsets& actual, const std::vector<float>& expected) {
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(actual.value[k], expected[k], 1e-5f) << "offset " << k;
}

TEST(BoxCodingTest, CornerOffsetsAreCornerDifferencesOverTheVariances) {
  // (0.3 - 0.2) / 0.1, (0.2 - 0.2) / 0.1, (0.5 - 0.6) / 0.2, (0.8 - 0.6) / 0.2
  const BoxOffsets t = encode_box(kPrior, kVariance, BoxCode::kCorner, kBox);
  expect_offsets(t, {1.0f, 0.0f, -0.5f, 1.0f});
  expect_near_box(decode_box(kPrior, kVariance, BoxCode::kCorner, t), kBox);
}

TEST(BoxCodingTest, CornerSizeOffsetsAreAlsoDividedByThePriorsSize) {
  // The prior is 0.4 x 0.4: the corner offsets above, each / 0.4.
  const BoxOffsets t = encode_box(kPrior, kVariance, BoxCode::kCornerSize, kBox);
  expect_offsets(t, {2.5f, 0.0f, -1.25f, 2.5f});
  expect_near_box(decode_box(kPrior, kVariance, BoxCode::kCornerSize, t), kBox);
}

TEST(BoxCodingTest, CenterSizeOffsetsAreCentreShiftsAndLogSizeRatios) {
  // Prior centre (0.4, 0.4), size 0.4; box centre (0.4, 0.5), size 0.2 x 0.6.
  const BoxOffsets t = encode_box(kPrior, kVariance, BoxCode::kCenterSize, kBox);
  expect_offsets(t, {0.0f, 0.1f / 0.4f / 0.1f, std::log(0.5f) / 0.2f, std::log(1.5f) / 0.2f});
  expect_near_box(decode_box(kPrior, kVariance, BoxCode::kCenterSize, t), kBox);
}

TEST(BoxCodingTest, UnitVarianceIsTheVarianceEncodedInTheTarget) {
  const BoxOffsets t = encode_box(kPrior, BoxVariance{}, BoxCode::kCorner, kBox);
  expect_offsets(t, {0.1f, 0.0f, -0.1f, 0.2f});
}

// b0 and b1 overlap by 0.9, b0 and b2 by exactly 0.5, b3 is apart, b4 is
// below the score threshold.
const std::vector<NormalizedBox> kBoxes = {
    {0, 0, 1, 1}, {0, 0, 1, 0.9f}, {0, 0, 0.5f, 1}, {2, 2, 3, 3}, {0, 0, 1, 1}};
const std::vector<float> kScores = {0.9f, 0.85f, 0.8f, 0.7f, 0.05f};

TEST(NonMaximumSuppressionTest, KeepsBoxesOverlappingKeptOnesByAtMostTheThreshold) {
  SuppressionSettings settings;
  settings.score_threshold = 0.1f;
  settings.nms_threshold = 0.5f;
  // b1 (0.9 > 0.5) goes, b2 (0.5, not above) stays, b4 is below 0.1.
  EXPECT_EQ(non_maximum_suppression(kBoxes, kScores, settings), (std::vector<int>{0, 2, 3}));
  settings.top_k = 2;  // only b0 and b1 are candidates
  EXPECT_EQ(non_maximum_suppression(kBoxes, kScores, settings), (std::vector<int>{0}));
}

TEST(NonMaximumSuppressionTest, AdaptiveThresholdShrinksByEtaAfterEachKeptBox) {
  SuppressionSettings settings;
  settings.nms_threshold = 0.7f;
  settings.eta = 0.5f;
  // After b0 the threshold is 0.35: b2's overlap of 0.5 now suppresses it;
  // it stays 0.35 (not above 0.5) after b3; b4 overlaps b0 fully.
  EXPECT_EQ(non_maximum_suppression(kBoxes, kScores, settings), (std::vector<int>{0, 3}));
}

TEST(NonMaximumSuppressionTest, RanksByScoreKeepingTheOrderOfTies) {
  EXPECT_EQ(indices_by_score({0.5f, 0.7f, 0.5f, 0.1f}, 0.2f, -1), (std::vector<int>{1, 0, 2}));
}

// Priors: the four quadrant-sized boxes p0 (top left), p1 (top right), p2
// (bottom left) and p3 (centre); boxes g0 (mostly p0) and g1 (mostly p3).
// IoU: p0-g0 0.8, p3-g0 0.0909, p0-g1 0.0870, p1-g1 = p2-g1 = 0.1364,
// p3-g1 0.6807; p1-g0 and p2-g0 do not overlap (p2 only touches g0).
const std::vector<NormalizedBox> kPriors = {
    {0, 0, 0.5f, 0.5f}, {0.5f, 0, 1, 0.5f}, {0, 0.5f, 0.5f, 1}, {0.25f, 0.25f, 0.75f, 0.75f}};
const std::vector<NormalizedBox> kTruth = {{0, 0, 0.4f, 0.5f}, {0.3f, 0.3f, 0.8f, 0.8f}};

TEST(MultiBoxMatchingTest, BipartiteThenPerPredictionAboveTheThreshold) {
  BoxMatches m = match_boxes(kTruth, {0, 1}, kPriors, MatchType::kPerPrediction, 0.5f, false);
  EXPECT_EQ(m.ground_truth, (std::vector<int>{0, -1, -1, 1}));
  testing::expect_near_all(m.overlap, {0.8f, 0.136364f, 0.136364f, 0.680672f}, 1e-5f);

  m = match_boxes(kTruth, {0, 1}, kPriors, MatchType::kPerPrediction, 0.1f, false);
  EXPECT_EQ(m.ground_truth, (std::vector<int>{0, 1, 1, 1}));

  m = match_boxes(kTruth, {0, 1}, kPriors, MatchType::kBipartite, 0.1f, false);
  EXPECT_EQ(m.ground_truth, (std::vector<int>{0, -1, -1, 1}));
}

TEST(MultiBoxMatchingTest, BipartiteGivesEachBoxItsBestFreePrediction) {
  // g1 overlaps p0 best of all pairs (0.9), so g0, whose best is also p0,
  // gets its next best, p3.
  const std::vector<NormalizedBox> truth = {{0, 0, 0.4f, 0.5f}, {0, 0, 0.5f, 0.45f}};
  const BoxMatches m = match_boxes(truth, {0, 1}, kPriors, MatchType::kBipartite, 0.5f, false);
  EXPECT_EQ(m.ground_truth, (std::vector<int>{1, -1, -1, 0}));
}

TEST(MultiBoxMatchingTest, CandidatesAndCrossBoundaryPriors) {
  // Only g1 may match; p3 reaches outside the image and is ignored, so g1
  // takes the first of its two equal best, p1.
  std::vector<NormalizedBox> priors = kPriors;
  priors[3] = {0.25f, 0.25f, 0.75f, 1.05f};
  const BoxMatches m = match_boxes(kTruth, {1}, priors, MatchType::kPerPrediction, 0.5f, true);
  EXPECT_EQ(m.ground_truth, (std::vector<int>{-1, 1, -1, -2}));
}

TEST(MultiBoxMatchingTest, MaxNegativeMiningKeepsTheHardestUnmatchedBelowNegOverlap) {
  BoxMatches m;
  m.ground_truth = {0, -1, -1, -1, -1, -1};
  m.overlap = {0.8f, 0.6f, 0.1f, 0.2f, 0.0f, 0.3f};
  MiningSettings settings;
  settings.neg_pos_ratio = 2;  // one positive: two negatives
  // Prior 1 overlaps 0.6 >= neg_overlap 0.5: not a candidate despite its loss.
  const std::vector<float> loss = {5, 9, 1, 3, 4, 2};
  EXPECT_EQ(mine_negatives(m, loss, {}, settings), (std::vector<int>{3, 4}));
}

TEST(MultiBoxMatchingTest, HardExampleMiningUnmatchesPositivesItDoesNotKeep) {
  BoxMatches m;
  m.ground_truth = {0, -1, 1, -1};
  m.overlap = {0.8f, 0.6f, 0.7f, 0.0f};
  MiningSettings settings;
  settings.type = MiningType::kHardExample;
  settings.sample_size = 2;
  const std::vector<float> loss = {1, 9, 0.5f, 3};
  EXPECT_EQ(mine_negatives(m, loss, {}, settings), (std::vector<int>{1, 3}));
  EXPECT_EQ(m.ground_truth, (std::vector<int>{-1, -1, -1, -1}));
}

// Three boxes of the class; ranked: TP (0.9), FP (0.8), TP (0.7), TP (0.6).
// precision 1, 1/2, 2/3, 3/4 at recall 1/3, 1/3, 2/3, 1.
std::vector<RankedDetection> ranked() {
  return {{0.7f, true}, {0.9f, true}, {0.6f, true}, {0.8f, false}};
}

TEST(AveragePrecisionTest, ElevenPointMaxIntegralAndIntegralByHand) {
  // Recall levels 0 to 0.3 see precision 1, the other seven see 3/4.
  EXPECT_NEAR(average_precision(ranked(), 3, ApVersion::k11Point), (4 + 7 * 0.75f) / 11, 1e-6f);
  // Envelope 1 up to recall 1/3, then 3/4.
  EXPECT_NEAR(average_precision(ranked(), 3, ApVersion::kMaxIntegral), (1 + 0.75f + 0.75f) / 3,
              1e-6f);
  EXPECT_NEAR(average_precision(ranked(), 3, ApVersion::kIntegral), (1 + 2.0f / 3 + 0.75f) / 3,
              1e-6f);
}

TEST(AveragePrecisionTest, NoDetectionsOrNoBoxesGiveZero) {
  EXPECT_EQ(average_precision({}, 3, ApVersion::kIntegral), 0.0f);
  EXPECT_EQ(average_precision(ranked(), 0, ApVersion::k11Point), 0.0f);
}

TEST(AveragePrecisionTest, EvaluationAveragesEveryClassWithBoxesOverBatches) {
  DetectionEvaluation evaluation;
  // Batch 1: class 1 has 2 boxes, class 2 has 1; a hit and a miss of class 1.
  const std::vector<float> first = {-1, 1, 2,    -1, -1, -1, 2, 1,    -1, -1,
                                    0,  1, 0.9f, 1,  0,  0,  1, 0.4f, 0,  1};
  // Batch 2: class 1 has 2 more boxes and one hit; a difficult match (0, 0)
  // that does not count; class 2 detects nothing.
  const std::vector<float> second = {-1, 1, 2,    -1, -1, -1, 2, 0,     -1, -1,
                                     0,  1, 0.8f, 1,  0,  0,  1, 0.95f, 0,  0};
  evaluation.add_rows(first.data(), 4);
  evaluation.add_rows(second.data(), 4);
  // Class 1, ranked 0.9 TP, 0.8 TP, 0.4 FP with 4 boxes: Integral AP = 1/2.
  std::map<int, float> per_class;
  EXPECT_NEAR(evaluation.mean_average_precision(ApVersion::kIntegral, &per_class), 0.25f, 1e-6f);
  EXPECT_NEAR(per_class[1], 0.5f, 1e-6f);
  EXPECT_EQ(per_class[2], 0.0f);
}

TEST(AveragePrecisionTest, UnknownVersionIsAnErrorNamingTheChoices) {
  testing::expect_error([] { parse_ap_version("VOC", "ap_version"); },
                        {"ap_version", "\"VOC\"", "11point", "MaxIntegral", "Integral"});
}

}  // namespace
}  // namespace xtrain::detection

// MultiBoxLoss's two choices per image, as SSD makes them: which ground-truth
// box each prediction (prior) learns from, and which unmatched predictions
// learn "background" (hard-negative mining).
//
// Matching, with IoU the Jaccard overlap and only pairs with IoU > 1e-6
// considered:
//   1. bipartite: repeatedly take the unmatched prediction and the
//      not-yet-used ground-truth box with the largest IoU of all such pairs
//      (ties: the lowest prediction index, then the lowest box) and match
//      them, until no pair is left; every box gets at most one prediction;
//   2. per prediction (match_type PER_PREDICTION): every prediction still
//      unmatched takes the box it overlaps most, if that IoU is at least
//      overlap_threshold.
// A prediction's overlap is its matched IoU, or its largest IoU with any box
// when unmatched (mining compares it with neg_overlap). With
// ignore_cross_boundary_bbox, predictions reaching outside [0, 1] are never
// matched (index -2).
//
// Mining, from each prediction's loss (the confidence loss against its
// target class; for HARD_EXAMPLE plus its localization loss):
//   MAX_NEGATIVE: the candidates are the unmatched predictions whose
//     overlap is below neg_overlap; keep the int(positives * neg_pos_ratio)
//     with the largest loss as negatives.
//   HARD_EXAMPLE: every prediction is a candidate; keep the sample_size with
//     the largest loss; positives not kept become unmatched (-1), unmatched
//     ones kept are negatives.
// With an nms_param (nms_threshold > 0), the candidates are first thinned by
// non-maximum suppression over their boxes, ranked by loss.
#pragma once

#include <vector>

#include "layers/non_maximum_suppression.hpp"
#include "layers/normalized_box.hpp"

namespace xtrain::detection {

enum class MatchType { kBipartite, kPerPrediction };

struct BoxMatches {
  std::vector<int> ground_truth;  // per prediction: a box index, -1 none, -2 ignored
  std::vector<float> overlap;     // per prediction
};

// `candidates`: the indices into `ground_truth` that may be matched (SSD
// matches per class when locations are not shared).
BoxMatches match_boxes(const std::vector<NormalizedBox>& ground_truth,
                       const std::vector<int>& candidates,
                       const std::vector<NormalizedBox>& predictions, MatchType type,
                       float overlap_threshold, bool ignore_cross_boundary);

enum class MiningType { kNone, kMaxNegative, kHardExample };

struct MiningSettings {
  MiningType type = MiningType::kMaxNegative;
  float neg_pos_ratio = 3;
  float neg_overlap = 0.5f;
  int sample_size = 64;
  bool suppress = false;  // an nms_param with nms_threshold > 0
  float nms_threshold = 0;
  int nms_top_k = -1;
};

// The negatives of one image (prediction indices, ascending). May unmatch
// positives in `matches` (HARD_EXAMPLE). `boxes`: what NMS compares (priors
// or decoded predictions); read only when settings.suppress.
std::vector<int> mine_negatives(BoxMatches& matches, const std::vector<float>& loss,
                                const std::vector<NormalizedBox>& boxes,
                                const MiningSettings& settings);

}  // namespace xtrain::detection

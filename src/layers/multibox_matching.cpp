#include "layers/multibox_matching.hpp"

#include <algorithm>
#include <limits>
#include <set>
#include <utility>

#include "xtrain/error.hpp"

namespace xtrain::detection {
namespace {

constexpr float kNoOverlap = 1e-6f;

bool crosses_boundary(const NormalizedBox& b) {
  const auto outside = [](float v) { return v < 0 || v > 1; };
  return outside(b.xmin) || outside(b.ymin) || outside(b.xmax) || outside(b.ymax);
}

// Mining's NMS (SSD's ApplyNMS, not the detection output's): by descending
// loss, boxes smaller than 1e-5 are dropped, a box is kept unless it overlaps
// a kept one by more than the threshold, and at most top_k are kept.
std::vector<int> suppress_by_loss(const std::vector<NormalizedBox>& boxes,
                                  const std::vector<float>& loss, float threshold, int top_k) {
  std::vector<int> order = indices_by_score(loss, -std::numeric_limits<float>::max(), top_k);
  std::vector<int> kept;
  for (const int candidate : order) {
    if (box_area(boxes[candidate]) < 1e-5f) continue;
    const bool keep = std::all_of(kept.begin(), kept.end(), [&](int k) {
      return jaccard_overlap(boxes[candidate], boxes[k]) <= threshold;
    });
    if (!keep) continue;
    kept.push_back(candidate);
    if (top_k > -1 && static_cast<int>(kept.size()) >= top_k) break;
  }
  return kept;
}

}  // namespace

BoxMatches match_boxes(const std::vector<NormalizedBox>& ground_truth,
                       const std::vector<int>& candidates,
                       const std::vector<NormalizedBox>& predictions, MatchType type,
                       float overlap_threshold, bool ignore_cross_boundary) {
  const std::size_t count = predictions.size();
  const std::size_t boxes = candidates.size();
  BoxMatches matches;
  matches.ground_truth.assign(count, -1);
  matches.overlap.assign(count, 0.0f);
  if (boxes == 0) return matches;

  // overlap[i * boxes + j]: 0 where the pair does not count.
  std::vector<float> overlap(count * boxes, 0.0f);
  for (std::size_t i = 0; i < count; ++i) {
    if (ignore_cross_boundary && crosses_boundary(predictions[i])) {
      matches.ground_truth[i] = -2;
      continue;
    }
    for (std::size_t j = 0; j < boxes; ++j) {
      const float iou = jaccard_overlap(predictions[i], ground_truth[candidates[j]]);
      if (iou <= kNoOverlap) continue;
      overlap[i * boxes + j] = iou;
      matches.overlap[i] = std::max(matches.overlap[i], iou);
    }
  }

  std::vector<bool> used(boxes, false);
  for (std::size_t round = 0; round < boxes; ++round) {
    float best = -1;
    std::size_t best_i = 0;
    std::size_t best_j = 0;
    for (std::size_t i = 0; i < count; ++i) {
      if (matches.ground_truth[i] != -1) continue;
      for (std::size_t j = 0; j < boxes; ++j) {
        const float iou = overlap[i * boxes + j];
        if (used[j] || iou <= 0 || iou <= best) continue;
        best = iou;
        best_i = i;
        best_j = j;
      }
    }
    if (best < 0) break;
    matches.ground_truth[best_i] = candidates[best_j];
    matches.overlap[best_i] = best;
    used[best_j] = true;
  }

  if (type == MatchType::kPerPrediction) {
    for (std::size_t i = 0; i < count; ++i) {
      if (matches.ground_truth[i] != -1) continue;
      float best = -1;
      for (std::size_t j = 0; j < boxes; ++j) {
        const float iou = overlap[i * boxes + j];
        if (iou <= 0 || iou < overlap_threshold || iou <= best) continue;
        best = iou;
        matches.ground_truth[i] = candidates[j];
      }
      if (best >= 0) matches.overlap[i] = best;
    }
  }
  return matches;
}

std::vector<int> mine_negatives(BoxMatches& matches, const std::vector<float>& loss,
                                const std::vector<NormalizedBox>& boxes,
                                const MiningSettings& settings) {
  if (settings.type == MiningType::kNone) return {};
  const std::size_t count = matches.ground_truth.size();
  XTRAIN_ASSERT(loss.size() == count, loss.size(), " losses for ", count, " predictions");

  std::vector<int> eligible;
  int positives = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const int match = matches.ground_truth[i];
    positives += match > -1 ? 1 : 0;
    const bool candidate = settings.type == MiningType::kHardExample ||
                           (match == -1 && matches.overlap[i] < settings.neg_overlap);
    if (candidate) eligible.push_back(static_cast<int>(i));
  }
  int wanted = static_cast<int>(eligible.size());
  if (settings.type == MiningType::kMaxNegative) {
    wanted =
        std::min(static_cast<int>(static_cast<float>(positives) * settings.neg_pos_ratio), wanted);
  } else {
    wanted = std::min(settings.sample_size, wanted);
  }

  std::vector<float> eligible_loss;
  for (const int i : eligible) eligible_loss.push_back(loss[i]);
  std::vector<int> ranked;  // positions in `eligible`, best first
  if (settings.suppress) {
    std::vector<NormalizedBox> eligible_boxes;
    for (const int i : eligible) eligible_boxes.push_back(boxes[i]);
    ranked =
        suppress_by_loss(eligible_boxes, eligible_loss, settings.nms_threshold, settings.nms_top_k);
  } else {
    ranked = indices_by_score(eligible_loss, -std::numeric_limits<float>::max(), -1);
  }
  if (static_cast<int>(ranked.size()) > wanted) ranked.resize(wanted);
  std::set<int> selected;
  for (const int r : ranked) selected.insert(eligible[r]);

  std::vector<int> negatives;
  for (std::size_t i = 0; i < count; ++i) {
    const bool kept = selected.count(static_cast<int>(i)) > 0;
    if (matches.ground_truth[i] > -1) {
      if (settings.type == MiningType::kHardExample && !kept) matches.ground_truth[i] = -1;
    } else if (matches.ground_truth[i] == -1 && kept) {
      negatives.push_back(static_cast<int>(i));
    }
  }
  return negatives;
}

}  // namespace xtrain::detection

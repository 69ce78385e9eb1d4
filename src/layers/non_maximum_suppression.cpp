#include "layers/non_maximum_suppression.hpp"

#include <algorithm>

#include "xtrain/error.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::detection {

SuppressionSettings suppression_settings(const NonMaximumSuppressionParameter& nms,
                                         float score_threshold, const std::string& where) {
  XTRAIN_CHECK(nms.nms_threshold() >= 0, where, ": nms_param.nms_threshold ", nms.nms_threshold(),
               " must not be negative");
  XTRAIN_CHECK(nms.eta() > 0 && nms.eta() <= 1, where, ": nms_param.eta ", nms.eta(),
               " must be in (0, 1]");
  SuppressionSettings settings;
  settings.score_threshold = score_threshold;
  settings.nms_threshold = nms.nms_threshold();
  settings.eta = nms.eta();
  settings.top_k = nms.has_top_k() ? nms.top_k() : -1;
  return settings;
}

std::vector<int> indices_by_score(const std::vector<float>& scores, float threshold, int top_k) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(scores.size()); ++i) {
    if (scores[i] > threshold) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return scores[a] > scores[b]; });
  if (top_k >= 0 && top_k < static_cast<int>(order.size())) order.resize(top_k);
  return order;
}

std::vector<int> non_maximum_suppression(const std::vector<NormalizedBox>& boxes,
                                         const std::vector<float>& scores,
                                         const SuppressionSettings& settings) {
  XTRAIN_ASSERT(boxes.size() == scores.size(), boxes.size(), " boxes, ", scores.size(), " scores");
  float threshold = settings.nms_threshold;
  std::vector<int> kept;
  for (const int candidate : indices_by_score(scores, settings.score_threshold, settings.top_k)) {
    const bool keep = std::all_of(kept.begin(), kept.end(), [&](int k) {
      return jaccard_overlap(boxes[candidate], boxes[k]) <= threshold;
    });
    if (!keep) continue;
    kept.push_back(candidate);
    if (settings.eta < 1 && threshold > 0.5f) threshold *= settings.eta;
  }
  return kept;
}

}  // namespace xtrain::detection

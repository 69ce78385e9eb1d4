// Greedy non-maximum suppression as SSD does it (ApplyNMSFast):
//
//   candidates = the boxes with score > score_threshold, by descending score
//                (ties keep their index order), the first top_k of them
//                (top_k < 0: all)
//   walk the candidates: keep a box unless its Jaccard overlap with a box
//   already kept exceeds the threshold t; t starts at nms_threshold and,
//   with eta < 1, is multiplied by eta after each kept box while t > 0.5
//   ("adaptive NMS").
//
// Returns the kept indices into `boxes`, in the order they were kept.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "layers/normalized_box.hpp"

namespace xtrain {
class NonMaximumSuppressionParameter;
}

namespace xtrain::detection {

struct SuppressionSettings {
  float score_threshold = -std::numeric_limits<float>::max();
  float nms_threshold = 0.3f;
  float eta = 1.0f;
  int top_k = -1;
};

// The settings of a layer's nms_param (checked: a threshold >= 0, an eta in
// (0, 1], else an Error naming the layer `where`), with `score_threshold`.
SuppressionSettings suppression_settings(const NonMaximumSuppressionParameter& nms,
                                         float score_threshold, const std::string& where);

// The indices of the scores above `threshold`, by descending score (stable),
// at most top_k of them (top_k < 0: all).
std::vector<int> indices_by_score(const std::vector<float>& scores, float threshold, int top_k);

std::vector<int> non_maximum_suppression(const std::vector<NormalizedBox>& boxes,
                                         const std::vector<float>& scores,
                                         const SuppressionSettings& settings);

}  // namespace xtrain::detection

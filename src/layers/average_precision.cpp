#include "layers/average_precision.hpp"

#include <algorithm>

#include "xtrain/error.hpp"

namespace xtrain::detection {

ApVersion parse_ap_version(const std::string& name, const std::string& field) {
  if (name == "11point") return ApVersion::k11Point;
  if (name == "MaxIntegral") return ApVersion::kMaxIntegral;
  if (name == "Integral") return ApVersion::kIntegral;
  throw Error(field + " is \"" + name +
              "\"; use \"11point\" (VOC2007), \"MaxIntegral\" (VOC2012) or \"Integral\"");
}

float average_precision(std::vector<RankedDetection> detections, int positives, ApVersion version) {
  if (detections.empty() || positives <= 0) return 0;
  std::stable_sort(
      detections.begin(), detections.end(),
      [](const RankedDetection& a, const RankedDetection& b) { return a.score > b.score; });
  const std::size_t n = detections.size();
  std::vector<float> precision(n);
  std::vector<float> recall(n);
  int true_positives = 0;
  for (std::size_t k = 0; k < n; ++k) {
    true_positives += detections[k].true_positive ? 1 : 0;
    precision[k] = static_cast<float>(true_positives) / static_cast<float>(k + 1);
    recall[k] = static_cast<float>(true_positives) / static_cast<float>(positives);
  }
  // envelope[k] = max precision at ranks >= k: the best precision at recall
  // >= recall[k], since recall never falls with rank.
  std::vector<float> envelope(precision);
  for (std::size_t k = n - 1; k-- > 0;) envelope[k] = std::max(envelope[k], envelope[k + 1]);

  constexpr float kSameRecall = 1e-6f;
  float ap = 0;
  switch (version) {
    case ApVersion::k11Point:
      for (int step = 0; step <= 10; ++step) {
        // In double as SSD compares: a recall of 0.7f (0.69999999) is below
        // the level 0.7.
        const double level = step / 10.0;
        const auto first = std::find_if(recall.begin(), recall.end(),
                                        [&](float r) { return static_cast<double>(r) >= level; });
        if (first != recall.end()) ap += envelope[first - recall.begin()] / 11.0f;
      }
      break;
    case ApVersion::kMaxIntegral:
    case ApVersion::kIntegral: {
      const std::vector<float>& height = version == ApVersion::kMaxIntegral ? envelope : precision;
      float previous = 0;
      for (std::size_t k = 0; k < n; ++k) {
        if (recall[k] - previous > kSameRecall) ap += height[k] * (recall[k] - previous);
        previous = recall[k];
      }
      break;
    }
  }
  return ap;
}

void DetectionEvaluation::add_rows(const float* rows, int count) {
  for (int r = 0; r < count; ++r) {
    const float* row = rows + 5 * r;
    const int label = static_cast<int>(row[1]);
    if (static_cast<int>(row[0]) == -1) {
      positives_[label] += static_cast<int>(row[2]);
      continue;
    }
    const bool true_positive = static_cast<int>(row[3]) != 0;
    const bool false_positive = static_cast<int>(row[4]) != 0;
    if (!true_positive && !false_positive) continue;
    detections_[label].push_back(RankedDetection{row[2], true_positive});
  }
}

float DetectionEvaluation::mean_average_precision(ApVersion version,
                                                  std::map<int, float>* per_class) const {
  if (positives_.empty()) return 0;
  float sum = 0;
  for (const auto& [label, positives] : positives_) {
    const auto found = detections_.find(label);
    const float ap =
        found == detections_.end() ? 0.0f : average_precision(found->second, positives, version);
    if (per_class) (*per_class)[label] = ap;
    sum += ap;
  }
  return sum / static_cast<float>(positives_.size());
}

}  // namespace xtrain::detection

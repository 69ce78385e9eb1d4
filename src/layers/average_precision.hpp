// Average precision of ranked detections, and the mean over classes that
// SSD's solver reports for a test net whose output is DetectionEvaluate's
// rows (eval_type: "detection").
//
// For one class, with its detections ranked by descending score (ties keep
// their order), tp_k / fp_k the true / false positives among the first k,
// and `positives` the number of ground-truth boxes:
//   precision_k = tp_k / (tp_k + fp_k),   recall_k = tp_k / positives
//   "11point"     (VOC2007) = (1/11) sum over r in {0, 0.1, ..., 1} of
//                             max {precision_k : recall_k >= r} (0 if none)
//   "MaxIntegral" (VOC2012, ILSVRC) = the area under the precision envelope
//                             p(r) = max {precision_k : recall_k >= r}
//   "Integral"    = sum over k of precision_k * (recall_k - recall_{k-1}),
//                   the area under the raw curve (recall_0 = 0)
// A class without detections or without ground truth has AP 0.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace xtrain::detection {

enum class ApVersion { k11Point, kMaxIntegral, kIntegral };

// "11point", "MaxIntegral" or "Integral"; throws naming `field` otherwise.
ApVersion parse_ap_version(const std::string& name, const std::string& field);

struct RankedDetection {
  float score = 0;
  bool true_positive = false;
};

float average_precision(std::vector<RankedDetection> detections, int positives, ApVersion version);

// Collects DetectionEvaluate's rows over test batches: (-1, label, positives,
// -1, -1) rows count a class's ground truth, (item, label, score, tp, fp)
// rows rank its detections; rows with tp = fp = 0 (a match to a difficult
// box that is not evaluated) are left out, as SSD does.
class DetectionEvaluation {
 public:
  // rows: count x 5 values.
  void add_rows(const float* rows, int count);

  // The mean of the AP of every class that had a (-1, label, ...) row;
  // fills `per_class` (label -> AP) when given.
  float mean_average_precision(ApVersion version, std::map<int, float>* per_class = nullptr) const;

 private:
  std::map<int, int> positives_;
  std::map<int, std::vector<RankedDetection>> detections_;
};

}  // namespace xtrain::detection

#include "layers/detection_blobs.hpp"

#include <algorithm>
#include <numeric>

#include "xtrain/error.hpp"

namespace xtrain::detection {
namespace {

// Rows of `width` values: the blob's last axis must be the row.
int rows_of(const Blob& blob, int width, const char* what, const std::string& where,
            const std::string& blob_name) {
  XTRAIN_CHECK(blob.num_axes() >= 1 && blob.shape(blob.num_axes() - 1) == width, where, ": ",
               blob_name, " of shape ", blob.shape_string(), " is not ", what,
               ": expected 1 x 1 x rows x ", width, " (one row of ", width,
               " values per box); connect the right blob");
  return static_cast<int>(blob.count() / width);
}

}  // namespace

PriorBoxes read_priors(const Blob& priors, const std::string& where, const std::string& blob_name) {
  XTRAIN_CHECK(priors.num_axes() == 3 && priors.shape(0) == 1 && priors.shape(1) == 2 &&
                   priors.shape(2) > 0 && priors.shape(2) % 4 == 0,
               where, ": the priors ", blob_name, " have shape ", priors.shape_string(),
               "; expected 1 x 2 x (priors * 4) as PriorBox (and Concat on axis 2) make them");
  const int count = priors.shape(2) / 4;
  const float* boxes = priors.cpu_data();
  const float* variances = boxes + priors.shape(2);
  PriorBoxes result;
  result.boxes.resize(count);
  result.variances.resize(count);
  for (int p = 0; p < count; ++p) {
    const float* b = boxes + 4 * p;
    result.boxes[p] = NormalizedBox{b[0], b[1], b[2], b[3]};
    for (int k = 0; k < 4; ++k) result.variances[p].value[k] = variances[4 * p + k];
  }
  return result;
}

GroundTruthByItem read_ground_truth(const Blob& ground_truth, int background_label,
                                    bool keep_difficult, const std::string& where,
                                    const std::string& blob_name) {
  const int rows =
      rows_of(ground_truth, kGroundTruthWidth, "a ground-truth blob", where, blob_name);
  const float* data = ground_truth.cpu_data();
  GroundTruthByItem result;
  for (int r = 0; r < rows; ++r) {
    const float* row = data + r * kGroundTruthWidth;
    const int item = static_cast<int>(row[0]);
    if (item == -1) continue;
    GroundTruthBox gt;
    gt.label = static_cast<int>(row[1]);
    XTRAIN_CHECK(item >= 0 && gt.label >= 0, where, ": ground-truth row ", r, " of ", blob_name,
                 " has item ", row[0], " and label ", row[1],
                 "; both must be non-negative (item -1 marks an empty row)");
    XTRAIN_CHECK(gt.label != background_label, where, ": ground-truth row ", r, " of ", blob_name,
                 " (item ", item, ") carries the background label ", background_label,
                 "; the data must not label boxes as background (check background_label_id "
                 "and the label map)");
    gt.box = NormalizedBox{row[3], row[4], row[5], row[6]};
    gt.difficult = row[7] != 0;
    if (gt.difficult && !keep_difficult) continue;
    result[item].push_back(gt);
  }
  return result;
}

std::map<int, std::vector<Detection>> read_detections(const Blob& detections,
                                                      const std::string& where,
                                                      const std::string& blob_name) {
  const int rows = rows_of(detections, kDetectionWidth, "a detection blob", where, blob_name);
  const float* data = detections.cpu_data();
  std::map<int, std::vector<Detection>> result;
  for (int r = 0; r < rows; ++r) {
    const float* row = data + r * kDetectionWidth;
    const int item = static_cast<int>(row[0]);
    auto& list = result[item];
    if (static_cast<int>(row[1]) == -1) continue;
    Detection d;
    d.label = static_cast<int>(row[1]);
    d.score = row[2];
    d.box = NormalizedBox{row[3], row[4], row[5], row[6]};
    list.push_back(d);
  }
  return result;
}

void keep_highest_scoring(int keep_top_k, std::vector<Detection>* detections) {
  if (keep_top_k < 0 || static_cast<int>(detections->size()) <= keep_top_k) return;
  std::vector<int> order(detections->size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return (*detections)[a].score > (*detections)[b].score; });
  order.resize(keep_top_k);
  std::sort(order.begin(), order.end());
  std::vector<Detection> kept;
  for (const int i : order) kept.push_back((*detections)[i]);
  *detections = std::move(kept);
}

void write_detections(const std::vector<std::vector<Detection>>& by_item, Blob* top) {
  const int items = static_cast<int>(by_item.size());
  int rows = 0;
  for (const auto& list : by_item) rows += static_cast<int>(list.size());
  if (rows == 0) {
    top->reshape({1, 1, items, kDetectionWidth});
    float* out = top->mutable_cpu_data();
    std::fill(out, out + top->count(), -1.0f);
    for (int item = 0; item < items; ++item) out[item * kDetectionWidth] = static_cast<float>(item);
    return;
  }
  top->reshape({1, 1, rows, kDetectionWidth});
  float* row = top->mutable_cpu_data();
  for (int item = 0; item < items; ++item) {
    for (const Detection& d : by_item[item]) {
      row[0] = static_cast<float>(item);
      row[1] = static_cast<float>(d.label);
      row[2] = d.score;
      row[3] = d.box.xmin;
      row[4] = d.box.ymin;
      row[5] = d.box.xmax;
      row[6] = d.box.ymax;
      row += kDetectionWidth;
    }
  }
}

void refuse_gradient(const std::string& where, const std::vector<bool>& propagate_down) {
  for (const bool needed : propagate_down) {
    XTRAIN_CHECK(!needed, where,
                 " has no gradient (it outputs detections or their evaluation); add "
                 "propagate_down: false for its bottoms or put it in the TEST phase only");
  }
}

}  // namespace xtrain::detection

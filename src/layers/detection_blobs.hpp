// The blob layouts the SSD layers exchange, read into boxes once:
//
//   priors (PriorBox, then Concat):  1 x 2 x (P * 4)
//       channel 0: P boxes (xmin, ymin, xmax, ymax), channel 1: their variances
//   ground truth (AnnotatedData):    1 x 1 x G x 8, one row per box
//       (item_id, label, instance_id, xmin, ymin, xmax, ymax, difficult);
//       item_id -1 marks a row without a box (a batch with no boxes at all)
//   detections (DetectionOutput):    1 x 1 x D x 7, one row per detection
//       (item_id, label, score, xmin, ymin, xmax, ymax); label -1 marks an
//       image without detections
#pragma once

#include <map>
#include <string>
#include <vector>

#include "layers/box_coding.hpp"
#include "xtrain/blob.hpp"

namespace xtrain::detection {

constexpr int kGroundTruthWidth = 8;
constexpr int kDetectionWidth = 7;

struct PriorBoxes {
  std::vector<NormalizedBox> boxes;
  std::vector<BoxVariance> variances;
};

struct GroundTruthBox {
  NormalizedBox box;
  int label = 0;
  bool difficult = false;
};

// Ground-truth boxes by item (image index in the batch), in row order.
using GroundTruthByItem = std::map<int, std::vector<GroundTruthBox>>;

struct Detection {
  NormalizedBox box;
  int label = 0;
  float score = 0;
};

// `where` prefixes errors (the layer); `blob_name` names the bottom.
// Throws unless the blob is 1 x 2 x (P * 4) with P > 0.
PriorBoxes read_priors(const Blob& priors, const std::string& where, const std::string& blob_name);

// Throws unless the blob is N x 1 x G x 8 (SSD checks N = 1 and C = 1;
// only the row width matters here, so any leading shape with G * 8 values
// whose last axis is 8 is read) and no box carries `background_label`.
// Difficult boxes are left out unless `keep_difficult`.
GroundTruthByItem read_ground_truth(const Blob& ground_truth, int background_label,
                                    bool keep_difficult, const std::string& where,
                                    const std::string& blob_name);

// The detections of each item; rows with label -1 ("none") are skipped, but
// their item is present (with no detections).
std::map<int, std::vector<Detection>> read_detections(const Blob& detections,
                                                      const std::string& where,
                                                      const std::string& blob_name);

// keep_top_k of the detection layers: when an image has more than
// keep_top_k (>= 0) detections over all its classes, the keep_top_k
// highest-scoring ones (ties: the earlier first), left in their order.
void keep_highest_scoring(int keep_top_k, std::vector<Detection>* detections);

// Writes the detections of each item (the index in `by_item` is the item id)
// as rows of 1 x 1 x D x 7, in order. When no item has any detection, the
// top is one row (item, -1, -1, -1, -1, -1, -1) per item, as SSD writes it.
void write_detections(const std::vector<std::vector<Detection>>& by_item, Blob* top);

// The backward of the layers that output detections or their evaluation:
// they have no gradient, so a bottom asking for one is a mistake in the net
// (an error naming `where`, the layer).
void refuse_gradient(const std::string& where, const std::vector<bool>& propagate_down);

}  // namespace xtrain::detection

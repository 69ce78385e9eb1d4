// YoloLoss's targets: what Darknet's YOLOv3 [yolo] layer trains each of its
// predictions toward, for one scale (one mask of anchors), as a target and a
// weight per element of the predictions (weight 0: no loss term there).
//
// Per image, in Darknet's order:
//  1. Every prediction: objectness target 0, weight 1 ("no object"), unless
//     its decoded box (yolo_ops.hpp) overlaps some true box of the image by
//     more than ignore_thresh (weight 0); above truth_thresh it is trained as
//     the box it overlaps most (step 3).
//  2. Every true box, in row order: the anchor whose shape fits it best, over
//     ALL anchors (shape_overlap; the first of equals). If that anchor is in
//     the mask, the prediction of that anchor in the cell holding the box's
//     centre is trained as the box (step 3); otherwise this scale leaves it
//     to another.
//  3. Trained as box (x, y, w, h) of class k, at anchor (aw, ah), cell (i, j):
//     objectness target 1 (weight 1); class targets one-hot k (weight 1) --
//     when the prediction already has class targets (a second box in the
//     same cell and anchor), only class k's target becomes 1, as Darknet's
//     delta_yolo_class; box targets x W - i, y H - j, log(w / aw),
//     log(h / ah), weighted by 2 - w h (small boxes count more). A later
//     box overwrites an earlier one's objectness and box targets.
#pragma once

#include <map>
#include <vector>

#include "layers/yolo_ops.hpp"

namespace xtrain::detection {

struct YoloTruth {
  ops::YoloBox box;  // centre and size, fractions of the net's input
  int class_index = 0;
};

// An anchor's size as fractions of the net's input.
struct YoloAnchor {
  float w = 0;
  float h = 0;
};

struct YoloTargetRules {
  std::vector<YoloAnchor> anchors;  // all of the net's
  std::vector<int> mask;            // the anchors this scale predicts
  float ignore_thresh = 0.7f;
  float truth_thresh = 1.0f;
};

struct YoloTargets {
  std::vector<float> target;
  std::vector<float> weight;
};

// `predictions`: layout.index(...)-addressed raw outputs of `items` images;
// `truths`: each image's true boxes (images without boxes may be absent).
YoloTargets assign_yolo_targets(const ops::YoloLayout& layout, const YoloTargetRules& rules,
                                const float* predictions, int items,
                                const std::map<int, std::vector<YoloTruth>>& truths);

}  // namespace xtrain::detection

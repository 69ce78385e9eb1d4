// DetectionEvaluate (SSD): marks each detection a true or false positive, for
// the mean average precision the solver computes over a whole test
// (eval_type: "detection"; layers/average_precision.hpp).
//
// Bottoms: the detections (DetectionOutput's 1 x 1 x D x 7) and the ground
// truth (1 x 1 x G x 8; detection_blobs.hpp). Top: 1 x 1 x R x 5, first one
// row (-1, label, positives, -1, -1) per class but background_label_id (the
// ground-truth boxes of that class in this batch, difficult ones only with
// evaluate_difficult_gt), then one row (item, label, score, tp, fp) per
// detection, items and labels ascending. Within an item and label, by
// descending score, a detection is a true positive when its best-overlapping
// box of that label overlaps it by at least overlap_threshold and no better
// detection took that box; a match to a difficult box that is not evaluated
// gives tp = fp = 0 (left out of the AP).
//
// With name_size_file (lines "name height width", in the order of the test
// data, cycling), boxes are compared in those pixels (both clipped to the
// image first; pixel areas count both end pixels), one line per item that
// appears in the detections (DetectionOutput lists every item when it found
// nothing at all, only the items with detections otherwise), as SSD reads them.
// With resize_param as well (the test data's transform_param.resize_param,
// as SSD's test nets repeat it), both boxes are first mapped back through
// that resize: WARP stretched the whole image, so normalized boxes stay;
// FIT_LARGE_SIZE_AND_PAD put a w x h image (the item's size) into the
// middle of the W x H output, with padding
//   w / h > W / H:  p = (H - W h / w) / 2 rows above and below,
//                   the frame f = (0, p / H, 1, 1 - p / H)
//   otherwise:      p = (W - H w / h) / 2 columns left and right,
//                   f = (p / W, 0, 1 - p / W, 1)
// so a box b becomes ((b.xmin - f.xmin) / (f.xmax - f.xmin), ...) before
// the clip, as SSD computes it (from the unrounded scale: the annotated
// data's resize places the image on whole pixels, at most half a pixel
// from f).
#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/detection_blobs.hpp"
#include "layers/detection_result_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using detection::NormalizedBox;

class DetectionEvaluateLayer : public DetectionResultLayer {
 public:
  using DetectionResultLayer::DetectionResultLayer;
  const char* type() const override { return "DetectionEvaluate"; }
  int exact_num_bottom_blobs() const override { return 2; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const DetectionEvaluateParameter& p = param_.detection_evaluate_param();
    XTRAIN_CHECK(p.has_num_classes() && p.num_classes() >= 1, where(),
                 " needs detection_evaluate_param { num_classes: ... } (background included)");
    XTRAIN_CHECK(p.overlap_threshold() > 0, where(), ": overlap_threshold ", p.overlap_threshold(),
                 " must be positive");
    if (!p.name_size_file().empty()) read_sizes(p.name_size_file());
    if (p.has_resize_param()) check_resize(p.resize_param());
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const DetectionEvaluateParameter& p = param_.detection_evaluate_param();
    const int classes = static_cast<int>(p.num_classes());
    const int background = static_cast<int>(p.background_label_id());
    const int class_rows = background >= 0 && background < classes ? classes - 1 : classes;
    int detections = 0;
    for (const auto& [item, list] :
         detection::read_detections(*bottom[0], where(), "the detections (bottom 0)")) {
      detections += static_cast<int>(list.size());
    }
    top[0]->reshape({1, 1, class_rows + detections, 5});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const DetectionEvaluateParameter& p = param_.detection_evaluate_param();
    const int background = static_cast<int>(p.background_label_id());
    const auto detections =
        detection::read_detections(*bottom[0], where(), "the detections (bottom 0)");
    // Every box, difficult or not: a detection on a difficult box is neither
    // true nor false when difficult boxes are not evaluated.
    const detection::GroundTruthByItem truth = detection::read_ground_truth(
        *bottom[1], background, true, where(), "the ground truth (bottom 1)");

    std::map<int, int> positives;
    for (const auto& [item, boxes] : truth) {
      for (const auto& gt : boxes) {
        if (p.evaluate_difficult_gt() || !gt.difficult) ++positives[gt.label];
      }
    }
    float* out = top[0]->mutable_cpu_data();
    std::fill(out, out + top[0]->count(), 0.0f);
    int row = 0;
    const auto put = [&](float a, float b, float c, float d, float e) {
      float* r = out + 5 * row++;
      r[0] = a;
      r[1] = b;
      r[2] = c;
      r[3] = d;
      r[4] = e;
    };
    for (int c = 0; c < static_cast<int>(p.num_classes()); ++c) {
      if (c == background) continue;
      put(-1, static_cast<float>(c), static_cast<float>(positives[c]), -1, -1);
    }

    for (const auto& [item, list] : detections) {
      std::map<int, std::vector<detection::Detection>> by_label;
      for (const auto& d : list) by_label[d.label].push_back(d);
      const auto found = truth.find(item);
      const std::pair<int, int>* size = next_size();
      for (auto& [label, dets] : by_label) {
        std::vector<detection::GroundTruthBox> boxes;
        if (found != truth.end()) {
          for (const auto& gt : found->second) {
            if (gt.label == label) boxes.push_back(gt);
          }
        }
        std::stable_sort(dets.begin(), dets.end(),
                         [](const auto& a, const auto& b) { return a.score > b.score; });
        std::vector<bool> taken(boxes.size(), false);
        for (const auto& d : dets) {
          float best = -1;
          int best_box = -1;
          for (int g = 0; g < static_cast<int>(boxes.size()); ++g) {
            const float iou = overlap(d.box, boxes[g].box, size);
            if (iou > best) {
              best = iou;
              best_box = g;
            }
          }
          float tp = 0;
          float fp = 1;
          if (best_box >= 0 && best >= p.overlap_threshold()) {
            if (!p.evaluate_difficult_gt() && boxes[best_box].difficult) {
              fp = 0;
            } else if (!taken[best_box]) {
              taken[best_box] = true;
              tp = 1;
              fp = 0;
            }
          }
          put(static_cast<float>(item), static_cast<float>(label), d.score, tp, fp);
        }
      }
    }
  }

 private:
  void read_sizes(const std::string& path) {
    std::ifstream in(path);
    XTRAIN_CHECK(in.good(), where(), ": cannot open name_size_file '", path,
                 "'; give an existing file of lines \"name height width\" or remove the field");
    std::string name;
    int height = 0;
    int width = 0;
    while (in >> name >> height >> width) sizes_.emplace_back(height, width);
    XTRAIN_CHECK(!sizes_.empty(), where(), ": name_size_file '", path,
                 "' holds no \"name height width\" lines");
  }

  void check_resize(const ResizeParameter& resize) const {
    XTRAIN_CHECK(!sizes_.empty(), where(),
                 ": resize_param maps boxes back to the original images, whose sizes come from "
                 "name_size_file; give name_size_file too (or remove resize_param to compare "
                 "normalized boxes)");
    XTRAIN_CHECK(resize.resize_mode() != ResizeParameter::FIT_SMALL_SIZE, where(),
                 ": resize_param.resize_mode FIT_SMALL_SIZE is not supported (nor by "
                 "AnnotatedData); use WARP or FIT_LARGE_SIZE_AND_PAD, as the test data's");
    XTRAIN_CHECK(resize.resize_mode() != ResizeParameter::FIT_LARGE_SIZE_AND_PAD ||
                     (resize.height() > 0 && resize.width() > 0),
                 where(),
                 ": resize_param FIT_LARGE_SIZE_AND_PAD needs height and width (> 0), the test "
                 "data's resize_param { height width }");
  }

  // The image size of the next item, cycling through the file; null without
  // a name_size_file (normalized boxes).
  const std::pair<int, int>* next_size() {
    if (sizes_.empty()) return nullptr;
    const std::pair<int, int>* size = &sizes_[next_size_];
    next_size_ = (next_size_ + 1) % sizes_.size();
    return size;
  }

  // `box` as a normalized box of the original image of (height, width) `size`.
  NormalizedBox before_resize(const NormalizedBox& box, const std::pair<int, int>& size) const {
    const DetectionEvaluateParameter& p = param_.detection_evaluate_param();
    if (!p.has_resize_param() ||
        p.resize_param().resize_mode() != ResizeParameter::FIT_LARGE_SIZE_AND_PAD) {
      return box;
    }
    const float out_w = static_cast<float>(p.resize_param().width());
    const float out_h = static_cast<float>(p.resize_param().height());
    const float aspect = static_cast<float>(size.second) / static_cast<float>(size.first);
    NormalizedBox f{0, 0, 1, 1};
    if (aspect > out_w / out_h) {
      const float rows = (out_h - out_w / aspect) / 2;
      f.ymin = rows / out_h;
      f.ymax = 1 - rows / out_h;
    } else {
      const float columns = (out_w - out_h * aspect) / 2;
      f.xmin = columns / out_w;
      f.xmax = 1 - columns / out_w;
    }
    const float w = f.xmax - f.xmin;
    const float h = f.ymax - f.ymin;
    return NormalizedBox{(box.xmin - f.xmin) / w, (box.ymin - f.ymin) / h, (box.xmax - f.xmin) / w,
                         (box.ymax - f.ymin) / h};
  }

  float overlap(const NormalizedBox& a, const NormalizedBox& b,
                const std::pair<int, int>* size) const {
    if (!size) return detection::jaccard_overlap(a, b);
    const auto to_pixels = [&](const NormalizedBox& box) {
      const NormalizedBox c = detection::clipped(before_resize(box, *size));
      const float h = static_cast<float>(size->first);
      const float w = static_cast<float>(size->second);
      return NormalizedBox{c.xmin * w, c.ymin * h, c.xmax * w, c.ymax * h};
    };
    return detection::jaccard_overlap(to_pixels(a), to_pixels(b), false);
  }

  std::vector<std::pair<int, int>> sizes_;  // (height, width)
  std::size_t next_size_ = 0;
};

}  // namespace

void register_detection_evaluate_layer(LayerRegistry& registry) {
  add_layer<DetectionEvaluateLayer>(registry, "DetectionEvaluate");
}

}  // namespace xtrain

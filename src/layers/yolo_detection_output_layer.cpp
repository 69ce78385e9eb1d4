// YoloDetectionOutput (YOLOv3's inference head): the detections of all the
// scales of a YOLOv3 net together, in DetectionOutput's format, so that
// DetectionEvaluate, the solver's detection mAP and `xtrain detect` read
// them as they read SSD's.
//
// Bottoms: the raw predictions of each scale k, N x (A_k (5 + C)) x H_k x W_k,
// where channel a (5 + C) + e holds entry e of the scale's anchor a: tx, ty,
// tw, th, the objectness, then the C class scores, all before any
// activation (Darknet's layout); then, unless yolo_param sets img_h and
// img_w, the net's data blob, of which only the height and width are read.
// yolo_param.mask lists the anchor indices of every prediction bottom one
// after another, in bottom order (a single prediction bottom without a mask
// uses every anchor, as Darknet does); anchors are (width, height) pairs in
// pixels of the img_w x img_h net input.
//
// For the cell in column i, row j of a W x H scale and its anchor (aw, ah),
// as Darknet's get_yolo_box (σ the logistic function):
//
//   centre x = (i + σ(tx)) / W        width  = exp(tw) aw / img_w
//   centre y = (j + σ(ty)) / H        height = exp(th) ah / img_h
//   score of class c = σ(objectness) σ(class score c)
//
// boxes normalized to the net input (not clipped, as Darknet leaves them),
// label c + first_class_label. Per image: every (box, class) whose score
// reaches confidence_threshold (Darknet keeps only scores above it, an
// edge no trained net meets), non-maximum suppression per class
// (nms_param; non_maximum_suppression.hpp, the IoU Darknet's do_nms_sort
// compares), then the keep_top_k best over all classes (-1: all).
//
// Top: 1 x 1 x D x 7 rows (item, label, score, xmin, ymin, xmax, ymax), as
// DetectionOutput writes them (detection_blobs.hpp): items in order, within
// an item the labels ascending, within a label by descending score; when no
// image has a detection, one row (item, -1, -1, -1, -1, -1, -1) per item.
//
// The layer runs on the host on either device: on a GPU, Layer's default
// forward_gpu runs forward_cpu, whose cpu_data() reads copy the bottoms to
// the host, as DetectionOutput does. The work is a pass over the
// predictions and a sort per class; the top's size is known only after NMS.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/detection_blobs.hpp"
#include "layers/detection_result_layer.hpp"
#include "layers/non_maximum_suppression.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using detection::NormalizedBox;

// The boxes of one class that reached the threshold, with their scores.
struct ClassCandidates {
  std::vector<NormalizedBox> boxes;
  std::vector<float> scores;
};

class YoloDetectionOutputLayer : public DetectionResultLayer {
 public:
  using DetectionResultLayer::DetectionResultLayer;
  const char* type() const override { return "YoloDetectionOutput"; }
  int min_bottom_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const YoloParameter& p = param_.yolo_param();
    XTRAIN_CHECK(p.has_num_classes() && p.num_classes() >= 1, where(),
                 " needs yolo_param { num_classes: ... } (the object classes, no background)");
    classes_ = static_cast<int>(p.num_classes());
    XTRAIN_CHECK(p.anchors_size() > 0 && p.anchors_size() % 2 == 0, where(), ": yolo_param has ",
                 p.anchors_size(),
                 " anchors values; give every anchor as a width, height pair in pixels of the "
                 "net input (anchors: 10 anchors: 14 anchors: 23 anchors: 27 ...)");
    for (int i = 0; i < p.anchors_size(); ++i) {
      XTRAIN_CHECK(p.anchors(i) > 0 && std::isfinite(p.anchors(i)), where(), ": anchors value ",
                   i + 1, " is ", p.anchors(i), "; anchor sizes must be positive pixels");
    }
    const int anchors = p.anchors_size() / 2;
    for (int i = 0; i < p.mask_size(); ++i) {
      XTRAIN_CHECK(static_cast<int>(p.mask(i)) < anchors, where(), ": mask value ", i + 1, " is ",
                   p.mask(i), ", but yolo_param has ", anchors,
                   " anchors (pairs); mask holds anchor indices from 0 to ", anchors - 1);
    }
    XTRAIN_CHECK(p.has_img_h() == p.has_img_w(), where(),
                 ": give both yolo_param img_h and img_w, or neither (then the last bottom is "
                 "the data blob, whose height and width are the net input's)");
    XTRAIN_CHECK(!p.has_img_h() || (p.img_h() > 0 && p.img_w() > 0), where(), ": img_h ", p.img_h(),
                 " and img_w ", p.img_w(), " must be positive");
    predictions_ = static_cast<int>(bottom.size()) - (p.has_img_h() ? 0 : 1);
    XTRAIN_CHECK(predictions_ >= 1, where(),
                 " needs the prediction blob of each scale as bottoms, then the data blob (or "
                 "yolo_param img_h and img_w instead of the data blob)");
    XTRAIN_CHECK(p.mask_size() > 0 || predictions_ == 1, where(), " has ", predictions_,
                 " prediction bottoms but no yolo_param mask; list the anchor indices of each "
                 "bottom in mask, one bottom after another (e.g. mask: 3 mask: 4 mask: 5 "
                 "mask: 0 mask: 1 mask: 2)");
    XTRAIN_CHECK(std::isfinite(p.confidence_threshold()), where(),
                 ": confidence_threshold must be a number");
    // The candidates are already thresholded (score >= confidence_threshold).
    settings_ = detection::suppression_settings(p.nms_param(), -FLT_MAX, where());
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const YoloParameter& p = param_.yolo_param();
    const int entries = 5 + classes_;
    first_anchor_.clear();
    int anchors_used = 0;
    std::ostringstream per_bottom;
    for (int k = 0; k < predictions_; ++k) {
      const Blob& b = *bottom[k];
      XTRAIN_CHECK(b.num_axes() == 4, where(), ": prediction bottom ", k, " has shape ",
                   b.shape_string(), "; expected N x (anchors x (5 + num_classes)) x H x W");
      XTRAIN_CHECK(b.num() == bottom[0]->num(), where(), ": prediction bottom ", k, " holds ",
                   b.num(), " images, bottom 0 ", bottom[0]->num(),
                   "; all scales must hold the "
                   "same batch");
      XTRAIN_CHECK(b.channels() % entries == 0 && b.channels() > 0, where(), ": prediction bottom ",
                   k, " has ", b.channels(),
                   " channels, not a multiple of 5 + num_classes = ", entries,
                   "; check num_classes and the convolution's num_output (anchors x (5 + "
                   "num_classes))");
      first_anchor_.push_back(anchors_used);
      anchors_used += b.channels() / entries;
      per_bottom << (k > 0 ? ", " : "") << b.channels() / entries;
    }
    const int named = p.mask_size() > 0 ? p.mask_size() : p.anchors_size() / 2;
    XTRAIN_CHECK(anchors_used == named, where(), ": the prediction bottoms hold ", anchors_used,
                 " anchors (", per_bottom.str(), " by their channels / ", entries,
                 ") but yolo_param ", p.mask_size() > 0 ? "mask names " : "has ", named,
                 "; give each bottom's anchor indices in mask, in bottom order");
    if (p.has_img_h()) {
      img_h_ = static_cast<int>(p.img_h());
      img_w_ = static_cast<int>(p.img_w());
    } else {
      const Blob& data = *bottom.back();
      XTRAIN_CHECK(data.num_axes() == 4 && data.height() > 0 && data.width() > 0, where(),
                   ": the last bottom, the data blob, has shape ", data.shape_string(),
                   "; expected N x C x H x W (or set yolo_param img_h and img_w)");
      img_h_ = data.height();
      img_w_ = data.width();
    }
    // The real row count is known after NMS; forward reshapes again.
    top[0]->reshape({1, 1, 1, detection::kDetectionWidth});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const YoloParameter& p = param_.yolo_param();
    const int items = bottom[0]->num();
    std::vector<std::vector<detection::Detection>> by_item(items);
    for (int item = 0; item < items; ++item) {
      std::vector<ClassCandidates> candidates(classes_);
      for (int k = 0; k < predictions_; ++k) add_candidates(*bottom[k], k, item, &candidates);
      std::vector<detection::Detection>& kept = by_item[item];
      for (int c = 0; c < classes_; ++c) {
        const ClassCandidates& found = candidates[c];
        for (const int i :
             detection::non_maximum_suppression(found.boxes, found.scores, settings_)) {
          kept.push_back({found.boxes[i], c + p.first_class_label(), found.scores[i]});
        }
      }
      detection::keep_highest_scoring(p.keep_top_k(), &kept);
    }
    detection::write_detections(by_item, top[0]);
  }

 private:
  // Decodes every cell and anchor of prediction bottom k for one image and
  // adds the (box, class) pairs whose score reaches the threshold.
  void add_candidates(const Blob& predictions, int k, int item,
                      std::vector<ClassCandidates>* candidates) const {
    const YoloParameter& p = param_.yolo_param();
    const ops::SigmoidForward sigmoid;
    const float threshold = p.confidence_threshold();
    const int height = predictions.height();
    const int width = predictions.width();
    const std::size_t plane = static_cast<std::size_t>(height) * width;
    const int entries = 5 + classes_;
    const int anchors = predictions.channels() / entries;
    const float* data =
        predictions.cpu_data() + static_cast<std::size_t>(item) * predictions.count(1);
    for (int a = 0; a < anchors; ++a) {
      const int anchor = p.mask_size() > 0 ? static_cast<int>(p.mask(first_anchor_[k] + a)) : a;
      const float anchor_w = p.anchors(2 * anchor);
      const float anchor_h = p.anchors(2 * anchor + 1);
      const float* entry = data + static_cast<std::size_t>(a) * entries * plane;
      for (int j = 0; j < height; ++j) {
        for (int i = 0; i < width; ++i) {
          const std::size_t cell = static_cast<std::size_t>(j) * width + i;
          // A class score is at most the objectness: skip the cell early.
          const float objectness = sigmoid(entry[4 * plane + cell]);
          if (objectness < threshold) continue;
          const float x = (i + sigmoid(entry[cell])) / width;
          const float y = (j + sigmoid(entry[plane + cell])) / height;
          const float w = std::exp(entry[2 * plane + cell]) * anchor_w / img_w_;
          const float h = std::exp(entry[3 * plane + cell]) * anchor_h / img_h_;
          const NormalizedBox box{x - w / 2, y - h / 2, x + w / 2, y + h / 2};
          for (int c = 0; c < classes_; ++c) {
            const float score = objectness * sigmoid(entry[(5 + c) * plane + cell]);
            if (score < threshold) continue;
            (*candidates)[c].boxes.push_back(box);
            (*candidates)[c].scores.push_back(score);
          }
        }
      }
    }
  }

  int classes_ = 0;
  int predictions_ = 0;            // prediction bottoms (scales)
  std::vector<int> first_anchor_;  // per prediction bottom: its first place in mask
  int img_h_ = 0;
  int img_w_ = 0;
  detection::SuppressionSettings settings_;
};

}  // namespace

void register_yolo_detection_output_layer(LayerRegistry& registry) {
  add_layer<YoloDetectionOutputLayer>(registry, "YoloDetectionOutput");
}

}  // namespace xtrain

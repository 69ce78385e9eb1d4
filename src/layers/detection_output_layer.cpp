// DetectionOutput (SSD): the detections of a single-shot detector.
//
// Bottoms: loc (N x P*L*4, L = 1 with share_location, else num_classes),
// conf (N x P*C: class probabilities, i.e. after Softmax over each prior's
// C scores, or Sigmoid), the priors (1 x 2 x P*4). Top: 1 x 1 x D x 7, one
// row (item, label, score, xmin, ymin, xmax, ymax) per detection, items in
// order, within an item the labels ascending, within a label by the order
// NMS kept them (descending score).
//
// Per item: decode each prior's offsets against it (box_coding.hpp; not
// clipped), then for every class but background_label_id run
// non-maximum suppression (non_maximum_suppression.hpp) over the scores above
// confidence_threshold, the best nms_param.top_k first; if more than
// keep_top_k (>= 0) boxes survive over all classes, keep the keep_top_k
// best-scoring ones. An output with no detection at all is, as in SSD, one
// row per item (item, -1, -1, -1, -1, -1, -1).
//
// save_output_param and visualize are read (SSD's files set them) but xtrain
// writes no result files and shows no windows: the top is the result.
//
// All of it runs on the host, as SSD's GPU path does its NMS: a sort and a
// greedy walk per class; decoding is a few thousand boxes per image.
#include <cfloat>
#include <vector>

#include "layers/box_coding.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/detection_blobs.hpp"
#include "layers/detection_result_layer.hpp"
#include "layers/non_maximum_suppression.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using detection::NormalizedBox;

class DetectionOutputLayer : public DetectionResultLayer {
 public:
  using DetectionResultLayer::DetectionResultLayer;
  const char* type() const override { return "DetectionOutput"; }
  int exact_num_bottom_blobs() const override { return 3; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const DetectionOutputParameter& p = param_.detection_output_param();
    XTRAIN_CHECK(p.has_num_classes() && p.num_classes() >= 1, where(),
                 " needs detection_output_param { num_classes: ... } (background included)");
    classes_ = static_cast<int>(p.num_classes());
    loc_classes_ = p.share_location() ? 1 : classes_;
    background_ = p.background_label_id();
    settings_ = detection::suppression_settings(
        p.nms_param(), p.has_confidence_threshold() ? p.confidence_threshold() : -FLT_MAX, where());
    if (!p.save_output_param().output_directory().empty() || p.visualize()) {
      XLOG(INFO) << where()
                 << ": save_output_param and visualize are ignored; the detections are the top";
    }
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(bottom[2]->num_axes() == 3 && bottom[2]->shape(2) % 4 == 0, where(),
                 ": the priors (bottom 2) have shape ", bottom[2]->shape_string(),
                 "; expected 1 x 2 x (priors * 4)");
    priors_ = bottom[2]->shape(2) / 4;
    XTRAIN_CHECK(bottom[0]->num_axes() >= 1 && bottom[1]->num_axes() >= 1 &&
                     bottom[0]->shape(0) == bottom[1]->shape(0),
                 where(), ": the locations ", bottom[0]->shape_string(), " and confidences ",
                 bottom[1]->shape_string(), " must have the same number of items");
    XTRAIN_CHECK(bottom[0]->count(1) == static_cast<std::size_t>(priors_) * loc_classes_ * 4,
                 where(), ": the locations ", bottom[0]->shape_string(), " do not hold 4 x ",
                 loc_classes_, " values for each of the ", priors_, " priors");
    XTRAIN_CHECK(bottom[1]->count(1) == static_cast<std::size_t>(priors_) * classes_, where(),
                 ": the confidences ", bottom[1]->shape_string(), " do not hold ", classes_,
                 " scores (num_classes) for each of the ", priors_, " priors");
    // The real row count is known after NMS; forward reshapes again.
    top[0]->reshape({1, 1, 1, detection::kDetectionWidth});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const DetectionOutputParameter& p = param_.detection_output_param();
    const int items = bottom[0]->shape(0);
    const detection::PriorBoxes priors =
        detection::read_priors(*bottom[2], where(), "the priors (bottom 2)");
    const float* loc = bottom[0]->cpu_data();
    const float* conf = bottom[1]->cpu_data();
    const auto code = static_cast<detection::BoxCode>(p.code_type());

    std::vector<std::vector<detection::Detection>> by_item(items);
    for (int item = 0; item < items; ++item) {
      const float* loc_item = loc + static_cast<std::size_t>(item) * priors_ * loc_classes_ * 4;
      const float* conf_item = conf + static_cast<std::size_t>(item) * priors_ * classes_;
      std::vector<std::vector<NormalizedBox>> boxes(loc_classes_);
      for (int c = 0; c < loc_classes_; ++c) {
        if (!p.share_location() && c == background_) continue;
        boxes[c].resize(priors_);
        for (int j = 0; j < priors_; ++j) {
          const float* t = loc_item + (static_cast<std::size_t>(j) * loc_classes_ + c) * 4;
          const detection::BoxVariance variance =
              p.variance_encoded_in_target() ? detection::BoxVariance{} : priors.variances[j];
          boxes[c][j] = detection::decode_box(priors.boxes[j], variance, code,
                                              detection::BoxOffsets{{t[0], t[1], t[2], t[3]}});
        }
      }
      // The boxes NMS kept, labels ascending.
      std::vector<detection::Detection>& kept = by_item[item];
      for (int c = 0; c < classes_; ++c) {
        if (c == background_) continue;
        std::vector<float> scores(priors_);
        for (int j = 0; j < priors_; ++j)
          scores[j] = conf_item[static_cast<std::size_t>(j) * classes_ + c];
        const auto& class_boxes = boxes[p.share_location() ? 0 : c];
        for (const int j : detection::non_maximum_suppression(class_boxes, scores, settings_)) {
          kept.push_back({class_boxes[j], c, scores[j]});
        }
      }
      detection::keep_highest_scoring(p.keep_top_k(), &kept);
    }
    detection::write_detections(by_item, top[0]);
  }

 private:
  int classes_ = 0;
  int loc_classes_ = 1;
  int background_ = 0;
  int priors_ = 0;
  detection::SuppressionSettings settings_;
};

}  // namespace

void register_detection_output_layer(LayerRegistry& registry) {
  add_layer<DetectionOutputLayer>(registry, "DetectionOutput");
}

}  // namespace xtrain

// YoloLoss (yolo_param): the training loss of one scale of a YOLOv3 head,
// Darknet's [yolo] layer.
//
// Bottoms: [0] the predictions N x (A (5 + C)) x H x W, raw outputs of a 1x1
// convolution (layout in yolo_ops.hpp; A = the mask's anchors, C =
// num_classes); [1] the ground truth, AnnotatedData's 1 x 1 x G x 8 rows
// (detection_blobs.hpp), class = label - first_class_label; [2], optional:
// the data, read only for the net input's height and width when img_h and
// img_w are not set (as PriorBox). Top: the loss.
//
// With targets t and weights u per element from yolo_targets.hpp (Darknet's
// assignment: "no object" everywhere except above ignore_thresh, the best
// anchor's prediction of each true box trained as that box),
//   loss = (1 / N) sum over elements of u * term(z, t)
//   term = softplus(z) - t z       for tx, ty, objectness and the classes
//          0.5 (z - t)^2           for tw and th
//   dloss/dz = (u / N) (sigmoid(z) - t)   resp.   (u / N) (z - t)
// so the gradient is Darknet's delta with the sign flipped (its delta is
// minus the gradient of these terms). Darknet reports the squared delta as
// its cost and divides the learning rate by the batch; dividing by N here
// makes the same updates with a batch-independent learning rate.
//
// True boxes: every row of an image is used (Darknet has no difficult flag);
// a label outside [first_class_label, first_class_label + C) is an error; a
// box without area is skipped (Darknet's loader drops boxes under 0.001).
//
// On a GPU this layer runs its CPU code (Layer's default forward_gpu and
// backward_gpu: the predictions are read through cpu_data, the gradient
// written through mutable_cpu_diff), as Darknet copies its [yolo] layer's
// input to the host: the assignment is a loop over true boxes per
// prediction, and the per-element math is yolo_ops.hpp's, the same functions
// a device kernel would call.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/detection_blobs.hpp"
#include "layers/loss_layer.hpp"
#include "layers/yolo_ops.hpp"
#include "layers/yolo_targets.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using detection::YoloTruth;

class YoloLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "YoloLoss"; }
  int exact_num_bottom_blobs() const override { return -1; }
  int min_bottom_blobs() const override { return 2; }
  int max_bottom_blobs() const override { return 3; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }

 protected:
  void loss_setup(const BlobVec& bottom, const BlobVec&) override {
    XTRAIN_CHECK(param_.has_yolo_param(), where(),
                 " needs yolo_param { num_classes: ... anchors: ... mask: ... }");
    const YoloParameter& p = param_.yolo_param();
    XTRAIN_CHECK(p.num_classes() > 0, where(),
                 ": yolo_param.num_classes must be positive (the classes of the data, no "
                 "background)");
    XTRAIN_CHECK(p.anchors_size() > 0 && p.anchors_size() % 2 == 0, where(), ": yolo_param gives ",
                 p.anchors_size(),
                 " values in anchors; give the net's anchors as width, height pairs in pixels "
                 "(Darknet's anchors = w1,h1, w2,h2, ...)");
    for (int k = 0; k < p.anchors_size(); ++k) {
      XTRAIN_CHECK(p.anchors(k) > 0, where(), ": anchors value ", k, " is ", p.anchors(k),
                   "; anchor widths and heights must be positive pixels");
    }
    const int total = p.anchors_size() / 2;
    mask_.clear();
    std::set<int> seen;
    for (const std::uint32_t m : p.mask()) {
      XTRAIN_CHECK(m < static_cast<std::uint32_t>(total), where(), ": mask ", m,
                   " is not an anchor: ", total, " anchors are given, numbered from 0");
      XTRAIN_CHECK(seen.insert(static_cast<int>(m)).second, where(), ": mask names anchor ", m,
                   " twice; name each anchor at most once");
      mask_.push_back(static_cast<int>(m));
    }
    // Darknet's default: without a mask, the layer predicts every anchor.
    if (mask_.empty()) {
      for (int n = 0; n < total; ++n) mask_.push_back(n);
    }
    XTRAIN_CHECK(p.has_img_h() == p.has_img_w(), where(),
                 ": set both yolo_param.img_h and img_w, or neither (then the net input's size "
                 "comes from a third bottom, the data)");
    XTRAIN_CHECK(!p.has_img_h() || (p.img_h() > 0 && p.img_w() > 0), where(),
                 ": yolo_param.img_h and img_w must be positive");
    XTRAIN_CHECK(p.has_img_h() || bottom.size() == 3, where(),
                 " needs the net input's size: set yolo_param { img_h: ... img_w: ... } or give "
                 "the data as a third bottom");
    XTRAIN_CHECK(!param_.loss_param().has_normalization() && !param_.loss_param().has_normalize(),
                 where(),
                 ": YoloLoss always divides by the batch size (as Darknet's learning rate); "
                 "remove loss_param's normalization");
    layout_.anchors = static_cast<int>(mask_.size());
    layout_.classes = static_cast<int>(p.num_classes());
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const YoloParameter& p = param_.yolo_param();
    const Blob& predictions = *bottom[0];
    XTRAIN_CHECK(predictions.num_axes() == 4, where(), ": the predictions ", bottom_name(0),
                 " of shape ", predictions.shape_string(), " must be N x C x H x W");
    XTRAIN_CHECK(predictions.shape(1) == layout_.anchors * layout_.entries(), where(),
                 ": the predictions ", bottom_name(0), " ", predictions.shape_string(), " have ",
                 predictions.shape(1), " channels, but ", layout_.anchors, " anchors of ",
                 layout_.classes, " classes need ", layout_.anchors, " x (5 + ", layout_.classes,
                 ") = ", layout_.anchors * layout_.entries(),
                 "; set the convolution's num_output to that, or fix mask and num_classes");
    layout_.height = predictions.shape(2);
    layout_.width = predictions.shape(3);
    if (p.has_img_h()) {
      image_h_ = static_cast<float>(p.img_h());
      image_w_ = static_cast<float>(p.img_w());
    } else {
      const Blob& data = *bottom[2];
      XTRAIN_CHECK(data.num_axes() == 4, where(), ": the data ", bottom_name(2), " of shape ",
                   data.shape_string(),
                   " must be N x C x H x W: only its height and width (the net input's size) "
                   "are read");
      image_h_ = static_cast<float>(data.shape(2));
      image_w_ = static_cast<float>(data.shape(3));
    }
    rules_.anchors.clear();
    for (int n = 0; n < p.anchors_size() / 2; ++n) {
      rules_.anchors.push_back({p.anchors(2 * n) / image_w_, p.anchors(2 * n + 1) / image_h_});
    }
    rules_.mask = mask_;
    rules_.ignore_thresh = p.ignore_thresh();
    rules_.truth_thresh = p.truth_thresh();
    top[0]->reshape(std::vector<int>{});
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    items_ = bottom[0]->shape(0);
    if (empty_batch(items_, top)) return;
    const float* z = bottom[0]->cpu_data();
    targets_ = detection::assign_yolo_targets(layout_, rules_, z, items_, read_truths(*bottom[1]));
    double loss = 0;
    for (std::size_t k = 0; k < targets_.weight.size(); ++k) {
      if (targets_.weight[k] == 0) continue;
      loss += targets_.weight[k] * ops::yolo_term(layout_.entry_of(k), z[k], targets_.target[k]);
    }
    top[0]->mutable_cpu_data()[0] = static_cast<float>(loss / items_);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "ground truth");
    // The data gives only its size: no gradient flows back to it.
    if (bottom.size() == 3 && propagate_down[2]) {
      std::fill_n(bottom[2]->mutable_cpu_diff(), bottom[2]->count(), 0.0f);
    }
    if (!propagate_down[0] || items_ == 0) return;
    const float scale = top[0]->cpu_diff()[0] / static_cast<float>(items_);
    const float* z = bottom[0]->cpu_data();
    float* dz = bottom[0]->mutable_cpu_diff();
    for (std::size_t k = 0; k < targets_.weight.size(); ++k) {
      const float weight = targets_.weight[k];
      if (weight == 0) {
        dz[k] = 0;
        continue;
      }
      dz[k] =
          scale * weight * ops::yolo_term_gradient(layout_.entry_of(k), z[k], targets_.target[k]);
    }
  }

 private:
  std::map<int, std::vector<YoloTruth>> read_truths(const Blob& ground_truth) const {
    const YoloParameter& p = param_.yolo_param();
    // No background label to refuse (-1 matches none); every row is used.
    const detection::GroundTruthByItem rows = detection::read_ground_truth(
        ground_truth, -1, /*keep_difficult=*/true, where(), bottom_name(1));
    std::map<int, std::vector<YoloTruth>> truths;
    for (const auto& [item, boxes] : rows) {
      XTRAIN_CHECK(item < items_, where(), ": the ground truth ", bottom_name(1),
                   " has a box for image ", item, ", but the batch has ", items_,
                   " images; connect the label top of the data layer that feeds the predictions");
      for (const detection::GroundTruthBox& row : boxes) {
        const int class_index = row.label - p.first_class_label();
        XTRAIN_CHECK(class_index >= 0 && class_index < layout_.classes, where(), ": label ",
                     row.label, " of a box in image ", item, " is not a class: with ",
                     "first_class_label ", p.first_class_label(), " and num_classes ",
                     layout_.classes, " labels must be in [", p.first_class_label(), ", ",
                     p.first_class_label() + layout_.classes - 1,
                     "]; check the label map, num_classes and first_class_label");
        const float w = row.box.xmax - row.box.xmin;
        const float h = row.box.ymax - row.box.ymin;
        if (!(w > 0 && h > 0)) continue;
        YoloTruth truth;
        truth.box = ops::YoloBox{row.box.xmin + w / 2, row.box.ymin + h / 2, w, h};
        truth.class_index = class_index;
        truths[item].push_back(truth);
      }
    }
    return truths;
  }

  std::vector<int> mask_;
  ops::YoloLayout layout_;
  detection::YoloTargetRules rules_;
  float image_h_ = 0;
  float image_w_ = 0;
  int items_ = 0;
  detection::YoloTargets targets_;
};

}  // namespace

void register_yolo_loss_layer(LayerRegistry& registry) {
  add_layer<YoloLossLayer>(registry, "YoloLoss");
}

}  // namespace xtrain

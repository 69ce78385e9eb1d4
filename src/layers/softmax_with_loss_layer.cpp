// SoftmaxWithLoss: the multinomial logistic loss of a softmax, computed in one
// layer for a stable gradient. Bottoms: scores (outer, C, inner) around
// softmax_param.axis, and labels (outer * inner integer values in [0, C)).
// With p = softmax(scores) over that axis and L the non-ignored positions:
//   loss = -1/N * sum_{(o,i) in L} log(max(p[o, label(o,i), i], FLT_MIN))
//   dE/dscores[o, c, i] = w/N * (p[o, c, i] - [c == label(o,i)])   for (o,i) in L,
//                         0                                        otherwise,
// where w is the loss weight (top[0]'s diff) and N the normaliser chosen by
// loss_param.normalization: FULL = outer * inner, VALID = |L|,
// BATCH_SIZE = outer, NONE = 1, and never below 1. An optional second top
// returns p itself (it gets no gradient).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/parallel_loop.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/loss_layer.hpp"
#include "layers/loss_ops.hpp"
#include "layers/loss_softmax.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/loss_kernels.hpp"
#endif

namespace xtrain {
namespace {

class SoftmaxWithLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SoftmaxWithLoss"; }
  // The loss, and optionally the probabilities (weighted 0 by default).
  int exact_num_top_blobs() const override { return -1; }
  int min_top_blobs() const override { return 1; }
  int max_top_blobs() const override { return 2; }

  void loss_setup(const BlobVec& bottom, const BlobVec&) override {
    softmax_.setup(param_, device(), bottom[0]);
    const LossParameter& loss = param_.loss_param();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    normalization_ = loss_normalization(loss, LossParameter::VALID);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    softmax_.reshape(device(), bottom[0], *bottom[1], where(), bottom_name(1));
    outer_num_ = softmax_.outer_num();
    inner_num_ = softmax_.inner_num();
    num_classes_ = softmax_.classes();
    if (top.size() >= 2) softmax_.share_as_top(top[1]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_.forward();
    const float* prob = softmax_.probability().cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const std::size_t class_stride = inner_num_;
    const std::size_t sample_stride = static_cast<std::size_t>(num_classes_) * inner_num_;
    // Accumulated in float with double logs, the way Caffe's code evaluates
    // it, so printed losses stay as close as possible to Caffe's.
    float loss = 0;
    std::size_t valid = 0;
    for (std::size_t o = 0; o < outer_num_; ++o) {
      for (std::size_t i = 0; i < inner_num_; ++i) {
        const float raw_label = labels[o * inner_num_ + i];
        const int label = label_rule()(raw_label);
        if (label == ops::kIgnoredLabel) continue;
        if (label == ops::kInvalidLabel) throw_invalid_label(raw_label, o * inner_num_ + i);
        const float p = prob[o * sample_stride + label * class_stride + i];
        loss = static_cast<float>(loss + ops::SoftmaxLossTerm{}(p));
        ++valid;
      }
    }
    top[0]->mutable_cpu_data()[0] = loss / normalizer(valid);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const float* labels = bottom[1]->cpu_data();
    // The labels are checked first, outside the thread pool (an error must
    // not be thrown from inside it).
    const ops::LabelRule rule = label_rule();
    const std::size_t positions = outer_num_ * inner_num_;
    label_classes_.resize(positions);
    std::size_t valid = 0;
    for (std::size_t j = 0; j < positions; ++j) {
      const int label = rule(labels[j]);
      label_classes_[j] = label;
      if (label == ops::kIgnoredLabel) continue;
      if (label == ops::kInvalidLabel) throw_invalid_label(labels[j], j);
      ++valid;
    }
    const ops::SoftmaxLossGradient gradient{top[0]->cpu_diff()[0] / normalizer(valid)};
    const float* prob = softmax_.probability().cpu_data();
    float* diff = bottom[0]->mutable_cpu_diff();
    const std::size_t sample_stride = static_cast<std::size_t>(num_classes_) * inner_num_;
    // One sample per task, class by class, with the positions' labels decided
    // above, so the loops vectorise (deciding each value's label inside the
    // loop ran 20-50x slower than Caffe's copy-and-fix-up loop; this runs as
    // fast or faster).
    parallel_for(static_cast<std::int64_t>(outer_num_), sample_stride * 3, [&](std::int64_t task) {
      const std::size_t o = static_cast<std::size_t>(task);
      const int* sample_labels = label_classes_.data() + o * inner_num_;
      if (inner_num_ == 1) {
        const int label = sample_labels[0];
        const float* p = prob + o * sample_stride;
        float* d = diff + o * sample_stride;
        for (int c = 0; c < num_classes_; ++c) d[c] = gradient(p[c], c, label);
        return;
      }
      for (int c = 0; c < num_classes_; ++c) {
        const std::size_t offset = o * sample_stride + c * inner_num_;
        const float* p = prob + offset;
        float* d = diff + offset;
        for (std::size_t i = 0; i < inner_num_; ++i) d[i] = gradient(p[i], c, sample_labels[i]);
      }
    });
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    softmax_.forward();
    const cuda::LossTotals totals = cuda::softmax_loss_forward(
        softmax_.probability().gpu_data(), bottom[1]->gpu_data(), outer_num_, num_classes_,
        inner_num_, has_ignore_label_, ignore_label_, gpu_loss_scratch());
    if (totals.first_invalid >= 0) {
      // Only now, to name the label: the one host read of the labels.
      const std::size_t position = static_cast<std::size_t>(totals.first_invalid);
      throw_invalid_label(bottom[1]->cpu_data()[position], position);
    }
    valid_ = static_cast<std::size_t>(totals.counted);
    top[0]->mutable_cpu_data()[0] = totals.sum / normalizer(valid_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    // The labels were checked and counted by forward_gpu.
    cuda::softmax_loss_backward(softmax_.probability().gpu_data(), bottom[1]->gpu_data(),
                                bottom[0]->mutable_gpu_diff(), outer_num_, num_classes_, inner_num_,
                                has_ignore_label_, ignore_label_,
                                top[0]->cpu_diff()[0] / normalizer(valid_));
  }
#endif

 private:
  // Caffe truncates the stored float label to an int before comparing.
  ops::LabelRule label_rule() const {
    return ops::LabelRule{has_ignore_label_, ignore_label_, num_classes_};
  }

  [[noreturn]] void throw_invalid_label(float raw_label, std::size_t position) const {
    throw Error(detail::concat(
        where(), ": label ", raw_label, " at position ", position,
        " is out of range: the scores have ", num_classes_, " classes, so labels must be in [0, ",
        num_classes_ - 1,
        "]; check the data's labels or the num_output of the layer that produces the "
        "scores",
        has_ignore_label_ ? "" : " (or set loss_param.ignore_label to skip a label)"));
  }

  float normalizer(std::size_t valid) const {
    return loss_normalizer(normalization_, outer_num_, inner_num_, valid);
  }

  LossSoftmax softmax_;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::VALID;
  std::size_t outer_num_ = 0;
  std::size_t inner_num_ = 0;
  int num_classes_ = 0;
  std::vector<int> label_classes_;  // backward_cpu: LabelRule of each position
#ifdef XTRAIN_USE_CUDA
  std::size_t valid_ = 0;  // labelled positions of the last forward_gpu
#endif
};

}  // namespace

void register_softmax_with_loss_layer(LayerRegistry& registry) {
  add_layer<SoftmaxWithLossLayer>(registry, "SoftmaxWithLoss");
}

}  // namespace xtrain

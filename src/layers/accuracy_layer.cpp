// Accuracy: the fraction of labelled positions whose true class is among the
// top_k scores. Bottoms: scores (outer, C, inner) around accuracy_param.axis
// and labels (outer * inner values in [0, C)); positions labelled
// accuracy_param.ignore_label are skipped.
//
// A position counts as correct when fewer than top_k OTHER classes score at
// least as high as the true class (Caffe 1.0's rule: ties count against the
// prediction, so all-equal scores are wrong whenever top_k < C).
//
// top[0] = correct / counted (0 when nothing is counted); the optional top[1]
// holds, per class c, correct_c / counted_c (0 for classes never seen).
// There is no gradient.
#include <algorithm>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/loss_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/loss_kernels.hpp"
#endif

namespace xtrain {
namespace {

class AccuracyLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Accuracy"; }
  int exact_num_bottom_blobs() const override { return 2; }
  int min_top_blobs() const override { return 1; }
  int max_top_blobs() const override { return 2; }
  // A metric, not a loss: force_backward must not ask it for gradients.
  bool allow_force_backward(int) const override { return false; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const AccuracyParameter& accuracy = param_.accuracy_param();
    top_k_ = accuracy.top_k();
    has_ignore_label_ = accuracy.has_ignore_label();
    ignore_label_ = accuracy.ignore_label();
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& scores = *bottom[0];
    const int axis = scores.canonical_axis_index(param_.accuracy_param().axis());
    outer_num_ = scores.count(0, axis);
    inner_num_ = scores.count(axis + 1);
    num_classes_ = scores.shape(axis);
    XTRAIN_CHECK(bottom[1]->count() == outer_num_ * inner_num_, where(), ": the labels (",
                 bottom[1]->shape_string(),
                 ") must hold one label per score position: ", outer_num_ * inner_num_,
                 " values for scores of shape ", scores.shape_string(),
                 " with the classes on axis ", axis);
    XTRAIN_CHECK(top_k_ <= static_cast<unsigned>(num_classes_), where(), ": top_k = ", top_k_,
                 " is more than the number of classes (", num_classes_, " on axis ", axis, " of ",
                 scores.shape_string(), ")");
    top[0]->reshape(std::vector<int>{});
    if (top.size() > 1) {
      top[1]->reshape(std::vector<int>{num_classes_});
      class_counts_.resize(num_classes_);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* scores = bottom[0]->cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const bool per_class = top.size() > 1;
    float* class_accuracy = per_class ? top[1]->mutable_cpu_data() : nullptr;
    if (per_class) {
      std::fill(class_counts_.begin(), class_counts_.end(), 0.0f);
      std::fill_n(class_accuracy, num_classes_, 0.0f);
    }
    const std::size_t sample_stride = static_cast<std::size_t>(num_classes_) * inner_num_;
    const ops::LabelRule rule{has_ignore_label_, ignore_label_, num_classes_};
    std::size_t correct = 0;
    std::size_t counted = 0;
    for (std::size_t o = 0; o < outer_num_; ++o) {
      for (std::size_t i = 0; i < inner_num_; ++i) {
        const std::size_t position = o * inner_num_ + i;
        const float raw_label = labels[position];
        const int label = rule(raw_label);
        if (label == ops::kIgnoredLabel) continue;
        if (label == ops::kInvalidLabel) throw_invalid_label(raw_label, position);
        const float* column = scores + o * sample_stride + i;
        if (per_class) class_counts_[label] += 1;
        if (ops::in_top_k(column, inner_num_, num_classes_, label, top_k_)) {
          ++correct;
          if (per_class) class_accuracy[label] += 1;
        }
        ++counted;
      }
    }
    top[0]->mutable_cpu_data()[0] =
        counted == 0 ? 0.0f : static_cast<float>(correct) / static_cast<float>(counted);
    if (per_class) {
      for (int c = 0; c < num_classes_; ++c) {
        class_accuracy[c] = class_counts_[c] == 0 ? 0.0f : class_accuracy[c] / class_counts_[c];
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    scratch_.reshape(std::vector<int>{cuda::kLossScratchFloats});
    const cuda::LossTotals totals = cuda::accuracy_forward(
        bottom[0]->gpu_data(), bottom[1]->gpu_data(), outer_num_, num_classes_, inner_num_, top_k_,
        has_ignore_label_, ignore_label_, top.size() > 1 ? top[1]->mutable_gpu_data() : nullptr,
        scratch_.mutable_gpu_data());
    if (totals.first_invalid >= 0) {
      const std::size_t position = static_cast<std::size_t>(totals.first_invalid);
      throw_invalid_label(bottom[1]->cpu_data()[position], position);
    }
    top[0]->mutable_cpu_data()[0] =
        totals.counted == 0 ? 0.0f : totals.sum / static_cast<float>(totals.counted);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_cpu(top, propagate_down, bottom);  // checks only; touches no data
  }
#endif

  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec&) override {
    for (std::size_t i = 0; i < propagate_down.size(); ++i) {
      XTRAIN_CHECK(!propagate_down[i], where(),
                   " has no gradient (it is a metric, not a loss); do not ask it to propagate "
                   "down to bottom ",
                   i);
    }
  }

 private:
  [[noreturn]] void throw_invalid_label(float raw_label, std::size_t position) const {
    throw Error(detail::concat(where(), ": label ", raw_label, " at position ", position,
                               " is out of range: the scores have ", num_classes_,
                               " classes, so labels must be in [0, ", num_classes_ - 1,
                               "]; check the data's labels or set accuracy_param.ignore_label"));
  }

  unsigned top_k_ = 1;
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  std::size_t outer_num_ = 0;
  std::size_t inner_num_ = 0;
  int num_classes_ = 0;
  std::vector<float> class_counts_;
#ifdef XTRAIN_USE_CUDA
  Blob scratch_;  // device memory for cuda::LossTotals
#endif
};

}  // namespace

void register_accuracy_layer(LayerRegistry& registry) {
  add_layer<AccuracyLayer>(registry, "Accuracy");
}

}  // namespace xtrain

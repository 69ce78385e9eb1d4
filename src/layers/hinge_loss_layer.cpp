// HingeLoss: the one-vs-all hinge loss of Caffe 1.0's HingeLossLayer. Scores
// s are N x K (K = count / N), labels l_n integers in [0, K). With
//   y_nk = +1 if k == l_n else -1,   m_nk = max(0, 1 - y_nk s_nk)
// (i.e. max(0, 1 + s) for the wrong classes and max(0, 1 - s) for the true one):
//   L1 (default): loss = sum m / N,     dE/ds_nk = -w/N * y_nk [m_nk > 0]
//   L2:           loss = sum m^2 / N,   dE/ds_nk = -2w/N * y_nk m_nk
// (w: the loss weight). The labels get no gradient.
#include <algorithm>

#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/loss_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class HingeLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "HingeLoss"; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    num_ = bottom[0]->shape(0);
    XTRAIN_CHECK(num_ > 0, where(), ": the scores ", bottom_name(0), " of shape ",
                 bottom[0]->shape_string(), " hold no samples");
    XTRAIN_CHECK(bottom[1]->count() == static_cast<std::size_t>(num_), where(), ": the labels ",
                 bottom_name(1), " of shape ", bottom[1]->shape_string(),
                 " must hold one label per sample: ", num_, " values for scores of shape ",
                 bottom[0]->shape_string());
    margins_.reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    const std::size_t classes = count / num_;
    const float* scores = bottom[0]->cpu_data();
    const float* labels = bottom[1]->cpu_data();
    float* margins = margins_.mutable_cpu_data();
    for (std::size_t j = 0; j < count; ++j) margins[j] = std::max(0.0f, 1 + scores[j]);
    for (int n = 0; n < num_; ++n) {
      const std::size_t label = checked_label(labels[n], static_cast<int>(classes), n);
      const std::size_t at = n * classes + label;
      margins[at] = std::max(0.0f, 1 - scores[at]);
    }
    const float sum = is_l2() ? math::dot(count, margins, margins) : math::asum(count, margins);
    top[0]->mutable_cpu_data()[0] = sum / static_cast<float>(num_);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    const std::size_t classes = count / num_;
    const float* margins = margins_.cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const float weight = top[0]->cpu_diff()[0];
    float* diff = bottom[0]->mutable_cpu_diff();
    if (is_l2()) {
      const float scale = weight * 2 / static_cast<float>(num_);
      for (std::size_t j = 0; j < count; ++j) diff[j] = scale * margins[j];
    } else {
      const float scale = weight / static_cast<float>(num_);
      for (std::size_t j = 0; j < count; ++j) diff[j] = margins[j] > 0 ? scale : 0.0f;
    }
    // The true class's margin falls as its score rises.
    for (int n = 0; n < num_; ++n) {
      const std::size_t at = n * classes + static_cast<std::size_t>(labels[n]);
      diff[at] = -diff[at];
    }
  }

 private:
  bool is_l2() const { return param_.hinge_loss_param().norm() == HingeLossParameter::L2; }

  int num_ = 1;
  Blob margins_;  // m, kept for backward
};

}  // namespace

void register_hinge_loss_layer(LayerRegistry& registry) {
  add_layer<HingeLossLayer>(registry, "HingeLoss");
}

}  // namespace xtrain

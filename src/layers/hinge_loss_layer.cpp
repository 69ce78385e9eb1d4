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
#include "layers/loss_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/loss_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class HingeLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "HingeLoss"; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    num_ = reshape_per_sample_loss(bottom, top, "scores");
    margins_.reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const std::size_t count = bottom[0]->count();
    const std::size_t classes = count / num_;
    const float* scores = bottom[0]->cpu_data();
    const float* labels = bottom[1]->cpu_data();
    float* margins = margins_.mutable_cpu_data();
    const ops::HingeMargin margin;
    for (std::size_t j = 0; j < count; ++j) margins[j] = margin(scores[j], false);
    for (int n = 0; n < num_; ++n) {
      const std::size_t label = checked_label(labels[n], static_cast<int>(classes), n);
      const std::size_t at = n * classes + label;
      margins[at] = margin(scores[at], true);
    }
    const float sum = is_l2() ? math::dot(count, margins, margins) : math::asum(count, margins);
    top[0]->mutable_cpu_data()[0] = sum / static_cast<float>(num_);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    const std::size_t classes = count / num_;
    const float* margins = margins_.cpu_data();
    const float* labels = bottom[1]->cpu_data();
    const float weight = top[0]->cpu_diff()[0];
    float* diff = bottom[0]->mutable_cpu_diff();
    const ops::HingeGradient gradient = hinge_gradient(weight);
    for (std::size_t j = 0; j < count; ++j) diff[j] = gradient(margins[j], false);
    // The true class's margin falls as its score rises.
    for (int n = 0; n < num_; ++n) {
      const std::size_t at = n * classes + static_cast<std::size_t>(labels[n]);
      diff[at] = gradient(margins[at], true);
    }
  }

  ops::HingeGradient hinge_gradient(float weight) const {
    return is_l2() ? ops::HingeGradient{weight * 2 / static_cast<float>(num_), true}
                   : ops::HingeGradient{weight / static_cast<float>(num_), false};
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const std::size_t count = bottom[0]->count();
    const int classes = static_cast<int>(count / num_);
    const float* labels = bottom[1]->gpu_data();
    const long long invalid = cuda::first_invalid_label(labels, num_, classes, gpu_loss_scratch());
    if (invalid >= 0) checked_label(bottom[1]->cpu_data()[invalid], classes, invalid);
    float* margins = margins_.mutable_gpu_data();
    cuda::hinge_margins(bottom[0]->gpu_data(), labels, margins, num_, classes);
    const float sum =
        is_l2() ? math::gpu::dot(count, margins, margins) : math::gpu::asum(count, margins);
    top[0]->mutable_cpu_data()[0] = sum / static_cast<float>(num_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const ops::HingeGradient gradient = hinge_gradient(top[0]->cpu_diff()[0]);
    cuda::hinge_backward(margins_.gpu_data(), bottom[1]->gpu_data(), bottom[0]->mutable_gpu_diff(),
                         num_, static_cast<int>(bottom[0]->count() / num_), gradient.scale,
                         gradient.l2);
  }
#endif

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

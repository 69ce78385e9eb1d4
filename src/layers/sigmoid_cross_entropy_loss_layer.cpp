// SigmoidCrossEntropyLoss: the cross-entropy of sigmoid(x) against targets t
// in [0, 1], Caffe 1.0's SigmoidCrossEntropyLossLayer. Over the positions L
// whose target is not loss_param.ignore_label:
//   loss   = -1/D * sum_{i in L} [t_i log p_i + (1 - t_i) log(1 - p_i)],
//            p = sigmoid(x), evaluated without overflow as
//            x_i (t_i - [x_i >= 0]) - log(1 + exp(x_i - 2 x_i [x_i >= 0]))
//   dE/dx_i = w/D * (p_i - t_i) for i in L, 0 otherwise   (w: the loss weight)
// D follows loss_param.normalization, whose default here is BATCH_SIZE
// (unlike SoftmaxWithLoss): FULL = x.count(), VALID = |L|, BATCH_SIZE =
// x.shape(0), NONE = 1. The targets get no gradient.
#include <cmath>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/loss_layer.hpp"
#include "layers/loss_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "layers/loss_kernels.hpp"
#endif

namespace xtrain {
namespace {

class SigmoidCrossEntropyLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "SigmoidCrossEntropyLoss"; }

  void loss_setup(const BlobVec&, const BlobVec&) override {
    const LossParameter& loss = param_.loss_param();
    has_ignore_label_ = loss.has_ignore_label();
    ignore_label_ = loss.ignore_label();
    normalization_ = loss_normalization(loss, LossParameter::BATCH_SIZE);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    XTRAIN_CHECK(bottom[0]->count() == bottom[1]->count(), where(), ": the scores ", bottom_name(0),
                 " of shape ", bottom[0]->shape_string(), " and the targets ", bottom_name(1),
                 " of shape ", bottom[1]->shape_string(),
                 " must have the same count: one target per score");
    probability_.reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    const float* x = bottom[0]->cpu_data();
    const float* target = bottom[1]->cpu_data();
    float* probability = probability_.mutable_cpu_data();
    const ops::SigmoidForward sigmoid;
    float loss = 0;
    std::size_t valid = 0;
    for (std::size_t i = 0; i < count; ++i) {
      probability[i] = sigmoid(x[i]);
      if (is_ignored(target[i])) continue;
      check_target(target[i], i);
      loss -= ops::SigmoidCrossEntropyTerm{}(x[i], target[i]);
      ++valid;
    }
    // Backward divides by the same normaliser.
    normalizer_ = loss_normalizer(normalization_, bottom[0]->shape(0), bottom[0]->count(1), valid);
    top[0]->mutable_cpu_data()[0] = loss / normalizer_;
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "targets");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    const float* probability = probability_.cpu_data();
    const float* target = bottom[1]->cpu_data();
    const float scale = top[0]->cpu_diff()[0] / normalizer_;
    float* diff = bottom[0]->mutable_cpu_diff();
    const ops::SigmoidCrossEntropyGradient gradient{scale};
    for (std::size_t i = 0; i < count; ++i) {
      diff[i] = gradient(probability[i], target[i], is_ignored(target[i]));
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    const float* x = bottom[0]->gpu_data();
    cuda::sigmoid_forward(x, probability_.mutable_gpu_data(), count);
    const cuda::LossTotals totals = cuda::sigmoid_cross_entropy_forward(
        x, bottom[1]->gpu_data(), count, has_ignore_label_, ignore_label_, gpu_loss_scratch());
    if (totals.first_invalid >= 0) {
      const std::size_t position = static_cast<std::size_t>(totals.first_invalid);
      check_target(bottom[1]->cpu_data()[position], position);
    }
    normalizer_ = loss_normalizer(normalization_, bottom[0]->shape(0), bottom[0]->count(1),
                                  static_cast<std::size_t>(totals.counted));
    // The CPU pass subtracts each term from the running loss.
    top[0]->mutable_cpu_data()[0] = -totals.sum / normalizer_;
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_gradient_to(propagate_down, 1, "targets");
    if (propagate_down.empty() || !propagate_down[0]) return;
    cuda::sigmoid_cross_entropy_backward(
        probability_.gpu_data(), bottom[1]->gpu_data(), bottom[0]->mutable_gpu_diff(),
        bottom[0]->count(), has_ignore_label_, ignore_label_, top[0]->cpu_diff()[0] / normalizer_);
  }
#endif

 private:
  // Caffe compares the target truncated to int with the ignore label.
  bool is_ignored(float target) const {
    return has_ignore_label_ && ops::truncates_to(target, ignore_label_);
  }

  void check_target(float target, std::size_t position) const {
    XTRAIN_CHECK(ops::sigmoid_target_valid(target), where(), ": target ", target, " at position ",
                 position, " is outside [0, 1]; targets are probabilities",
                 has_ignore_label_ ? "" : " (set loss_param.ignore_label to skip a label value)");
  }

  Blob probability_;  // sigmoid(x), kept for backward
  bool has_ignore_label_ = false;
  int ignore_label_ = 0;
  LossParameter::NormalizationMode normalization_ = LossParameter::BATCH_SIZE;
  float normalizer_ = 1;
};

}  // namespace

void register_sigmoid_cross_entropy_loss_layer(LayerRegistry& registry) {
  add_layer<SigmoidCrossEntropyLossLayer>(registry, "SigmoidCrossEntropyLoss");
}

}  // namespace xtrain

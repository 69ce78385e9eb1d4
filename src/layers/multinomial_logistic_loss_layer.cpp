// MultinomialLogisticLoss: the negative log-likelihood of given class
// probabilities, Caffe 1.0's MultinomialLogisticLossLayer. Bottom 0 holds
// probabilities p (N x K, K = count / N; e.g. a Softmax's output), bottom 1
// one integer label l_n in [0, K) per sample (N x 1 x 1 x 1):
//   loss = -1/N * sum_n log(max(p[n, l_n], 1e-20))
//   dE/dp[n, k] = -w/N / max(p[n, l_n], 1e-20)  for k == l_n, else 0
// (w: the loss weight). SoftmaxWithLoss is the stable way to train a softmax;
// this layer is for probabilities that come from elsewhere. The labels get no
// gradient.
#include <algorithm>
#include <cmath>

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

class MultinomialLogisticLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "MultinomialLogisticLoss"; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    num_ = reshape_per_sample_loss(bottom, top, "probabilities");
    classes_ = num_ > 0 ? static_cast<int>(bottom[0]->count() / num_) : 0;
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const float* probability = bottom[0]->cpu_data();
    const float* labels = bottom[1]->cpu_data();
    float loss = 0;
    for (int n = 0; n < num_; ++n) {
      const int label = checked_label(labels[n], classes_, n);
      const float p = probability[static_cast<std::size_t>(n) * classes_ + label];
      loss -= ops::MultinomialLogisticTerm{}(p);
    }
    top[0]->mutable_cpu_data()[0] = loss / static_cast<float>(num_);
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    const float* probability = bottom[0]->cpu_data();
    const float* labels = bottom[1]->cpu_data();
    float* diff = bottom[0]->mutable_cpu_diff();
    std::fill_n(diff, bottom[0]->count(), 0.0f);
    const ops::MultinomialLogisticGradient gradient{-top[0]->cpu_diff()[0] /
                                                    static_cast<float>(num_)};
    for (int n = 0; n < num_; ++n) {
      const std::size_t at =
          static_cast<std::size_t>(n) * classes_ + static_cast<std::size_t>(labels[n]);
      diff[at] = gradient(probability[at]);
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const cuda::LossTotals totals = cuda::multinomial_logistic_forward(
        bottom[0]->gpu_data(), bottom[1]->gpu_data(), num_, classes_, gpu_loss_scratch());
    if (totals.first_invalid >= 0) {
      const std::size_t n = static_cast<std::size_t>(totals.first_invalid);
      checked_label(bottom[1]->cpu_data()[n], classes_, n);
    }
    // The CPU pass subtracts each term from the running loss.
    top[0]->mutable_cpu_data()[0] = -totals.sum / static_cast<float>(num_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 1, "labels");
    if (propagate_down.empty() || !propagate_down[0]) return;
    float* diff = bottom[0]->mutable_gpu_diff();
    math::gpu::set(bottom[0]->count(), 0.0f, diff);
    cuda::multinomial_logistic_backward(bottom[0]->gpu_data(), bottom[1]->gpu_data(), diff, num_,
                                        classes_,
                                        -top[0]->cpu_diff()[0] / static_cast<float>(num_));
  }
#endif

 private:
  int num_ = 1;
  int classes_ = 1;
};

}  // namespace

void register_multinomial_logistic_loss_layer(LayerRegistry& registry) {
  add_layer<MultinomialLogisticLossLayer>(registry, "MultinomialLogisticLoss");
}

}  // namespace xtrain

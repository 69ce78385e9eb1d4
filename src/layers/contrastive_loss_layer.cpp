// ContrastiveLoss (Hadsell, Chopra & LeCun 2006), Caffe 1.0's
// ContrastiveLossLayer. Bottoms: features a and b (N x C, or N x C x 1 x 1)
// and a similarity label y (N values; non-zero after truncation to int means
// "similar"). With d_n = ||a_n - b_n||^2 and m = contrastive_loss_param.margin:
//   loss = 1/(2N) * sum_n ( y_n ? d_n : max(m - sqrt(d_n), 0)^2 )
//   legacy_version: dissimilar pairs contribute max(m - d_n, 0) instead.
// Gradients (w: the loss weight; dE/db = -dE/da):
//   similar:     dE/da_n =  w/N * (a_n - b_n)
//   dissimilar:  dE/da_n = -w/N * (m - s_n) / (s_n + 1e-4) * (a_n - b_n)
//                if m - s_n > 0, else 0, s_n = sqrt(d_n)  (Caffe's 1e-4 guards
//                against s_n = 0 and is kept for identical training)
//   legacy:      dE/da_n = -w/N * (a_n - b_n)  if m - d_n > 0, else 0
// The label gets no gradient.
#include <algorithm>
#include <cmath>

#include "core/math_functions.hpp"
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

class ContrastiveLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "ContrastiveLoss"; }
  int exact_num_bottom_blobs() const override { return 3; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 2; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    for (int i = 0; i < 2; ++i) {
      XTRAIN_CHECK(
          bottom[i]->num_axes() <= 4 && bottom[i]->height() == 1 && bottom[i]->width() == 1,
          where(), ": the features ", bottom_name(i), " of shape ", bottom[i]->shape_string(),
          " must be N x C (or N x C x 1 x 1)");
    }
    XTRAIN_CHECK(bottom[0]->channels() == bottom[1]->channels(), where(), ": the features ",
                 bottom_name(0), " of shape ", bottom[0]->shape_string(), " and ", bottom_name(1),
                 " of shape ", bottom[1]->shape_string(), " must have the same size C");
    num_ = bottom[0]->num();
    channels_ = bottom[0]->channels();
    XTRAIN_CHECK(bottom[2]->count() == static_cast<std::size_t>(num_), where(),
                 ": the similarity labels ", bottom_name(2), " of shape ",
                 bottom[2]->shape_string(), " must hold one value per pair: ", num_,
                 " for features of shape ", bottom[0]->shape_string());
    difference_.reshape_like(*bottom[0]);
    squared_distance_.resize(num_);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const std::size_t count = bottom[0]->count();
    const float* a = bottom[0]->cpu_data();
    const float* b = bottom[1]->cpu_data();
    const float* similar = bottom[2]->cpu_data();
    float* difference = difference_.mutable_cpu_data();
    const ops::Difference subtract;
    for (std::size_t j = 0; j < count; ++j) difference[j] = subtract(a[j], b[j]);
    const float margin = param_.contrastive_loss_param().margin();
    const bool legacy = param_.contrastive_loss_param().legacy_version();
    float loss = 0;
    for (int n = 0; n < num_; ++n) {
      const float* pair_difference = difference + static_cast<std::size_t>(n) * channels_;
      const float d = math::dot(channels_, pair_difference, pair_difference);
      squared_distance_[n] = d;
      loss += ops::ContrastiveTerm{margin, legacy}(d, is_similar(similar[n]));
    }
    top[0]->mutable_cpu_data()[0] = loss / static_cast<float>(num_) / 2.0f;
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 2, "similarity labels");
    const float margin = param_.contrastive_loss_param().margin();
    const bool legacy = param_.contrastive_loss_param().legacy_version();
    const float* similar = bottom[2]->cpu_data();
    const float* difference = difference_.cpu_data();
    for (int i = 0; i < 2; ++i) {
      if (static_cast<int>(propagate_down.size()) <= i || !propagate_down[i]) continue;
      const float sign = i == 0 ? 1.0f : -1.0f;
      const float alpha = sign * top[0]->cpu_diff()[0] / static_cast<float>(num_);
      float* diff = bottom[i]->mutable_cpu_diff();
      for (int n = 0; n < num_; ++n) {
        const std::size_t offset = static_cast<std::size_t>(n) * channels_;
        const float scale = ops::ContrastiveGradientScale{margin, legacy, alpha}(
            squared_distance_[n], is_similar(similar[n]));
        for (int c = 0; c < channels_; ++c) diff[offset + c] = scale * difference[offset + c];
      }
    }
  }

 private:
  // Caffe truncates the stored label to int: 0.5 is "dissimilar".
  static bool is_similar(float label) { return ops::contrastive_similar(label); }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(num_, top)) return;
    const std::size_t count = bottom[0]->count();
    float* difference = difference_.mutable_gpu_data();
    cuda::subtract(bottom[0]->gpu_data(), bottom[1]->gpu_data(), difference, count);
    squared_distance_gpu_.reshape(std::vector<int>{num_});
    float* squared_distance = squared_distance_gpu_.mutable_gpu_data();
    cuda::contrastive_distances(difference, squared_distance, num_, channels_);
    const cuda::LossTotals totals = cuda::contrastive_forward(
        squared_distance, bottom[2]->gpu_data(), num_, param_.contrastive_loss_param().margin(),
        param_.contrastive_loss_param().legacy_version(), gpu_loss_scratch());
    top[0]->mutable_cpu_data()[0] = totals.sum / static_cast<float>(num_) / 2.0f;
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (num_ == 0) return;
    refuse_gradient_to(propagate_down, 2, "similarity labels");
    for (int i = 0; i < 2; ++i) {
      if (static_cast<int>(propagate_down.size()) <= i || !propagate_down[i]) continue;
      const float sign = i == 0 ? 1.0f : -1.0f;
      const float alpha = sign * top[0]->cpu_diff()[0] / static_cast<float>(num_);
      cuda::contrastive_backward(squared_distance_gpu_.gpu_data(), bottom[2]->gpu_data(),
                                 difference_.gpu_data(), bottom[i]->mutable_gpu_diff(), num_,
                                 channels_, param_.contrastive_loss_param().margin(),
                                 param_.contrastive_loss_param().legacy_version(), alpha);
    }
  }

  Blob squared_distance_gpu_;  // d_n on the device
#endif

  int num_ = 0;
  int channels_ = 0;
  Blob difference_;                      // a - b
  std::vector<float> squared_distance_;  // d_n
};

}  // namespace

void register_contrastive_loss_layer(LayerRegistry& registry) {
  add_layer<ContrastiveLossLayer>(registry, "ContrastiveLoss");
}

}  // namespace xtrain

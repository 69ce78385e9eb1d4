// Normalize (SSD; norm_param): L2-normalizes each item (across_spatial:
// true) or each position's channel vector (false), then multiplies by a
// learned scale, one shared or one per channel (channel_shared), filled by
// scale_filler (default: the constant 1). SSD300 puts it after conv4_3 with
// across_spatial: false, channel_shared: false and a scale of 20.
// The math, forward and gradients, is in layers/normalize_ops.hpp.
// Not in place: the gradient reads the bottom.
#include <memory>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/normalize_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/detection_kernels.hpp"
#endif

namespace xtrain {
namespace {

class NormalizeLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Normalize"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    check_bottom(bottom, top);
    const NormalizeParameter& norm = param_.norm_param();
    XTRAIN_CHECK(norm.eps() >= 0, where(), ": norm_param.eps ", norm.eps(),
                 " must not be negative");
    channels_ = bottom[0]->shape(1);
    FillerParameter default_filler;
    default_filler.set_type("constant");
    default_filler.set_value(1.0f);
    const bool shared = norm.channel_shared();
    setup_learnable_blobs(where(),
                          {{"scale", shared ? std::vector<int>{} : std::vector<int>{channels_},
                            norm.has_scale_filler() ? &norm.scale_filler() : &default_filler,
                            "norm_param.scale_filler"}},
                          shared ? "(a single scale, as channel_shared is true)"
                                 : "(one scale per channel of the bottom " +
                                       bottom[0]->shape_string() + "); check channel_shared",
                          &blobs_, random());
    set_param_propagate_down(0, true);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    check_bottom(bottom, top);
    XTRAIN_CHECK(bottom[0]->shape(1) == channels_, where(), ": the bottom ",
                 bottom[0]->shape_string(), " has ", bottom[0]->shape(1),
                 " channels, but the layer was set up for ", channels_);
    top[0]->reshape_like(*bottom[0]);
    geometry_.num = static_cast<std::size_t>(bottom[0]->shape(0));
    geometry_.channels = static_cast<std::size_t>(channels_);
    geometry_.spatial = bottom[0]->count(2);
    geometry_.across_spatial = param_.norm_param().across_spatial();
    geometry_.channel_shared = param_.norm_param().channel_shared();
    norms_.reshape({static_cast<int>(geometry_.groups())});
    dots_.reshape({static_cast<int>(geometry_.groups())});
    channel_gradients_.reshape({channels_});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    const float* scale = blobs_[0]->cpu_data();
    float* norms = norms_.mutable_cpu_data();
    for (std::size_t g = 0; g < geometry_.groups(); ++g) {
      norms[g] = ops::normalize_group_norm(geometry_, x, g, param_.norm_param().eps());
    }
    float* y = top[0]->mutable_cpu_data();
    for (std::size_t i = 0; i < bottom[0]->count(); ++i) {
      y[i] = ops::normalize_forward(geometry_, x, scale, norms, i);
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = bottom[0]->cpu_data();
    const float* dy = top[0]->cpu_diff();
    const float* scale = blobs_[0]->cpu_data();
    const float* norms = norms_.cpu_data();
    if (param_propagate_down(0)) {
      float* partial = channel_gradients_.mutable_cpu_data();
      for (std::size_t c = 0; c < geometry_.channels; ++c) {
        partial[c] = ops::normalize_channel_scale_gradient(geometry_, x, dy, norms, c);
      }
      float* scale_diff = blobs_[0]->mutable_cpu_diff();
      if (geometry_.channel_shared) {
        float sum = 0;
        for (std::size_t c = 0; c < geometry_.channels; ++c) sum += partial[c];
        scale_diff[0] += sum;
      } else {
        for (std::size_t c = 0; c < geometry_.channels; ++c) scale_diff[c] += partial[c];
      }
    }
    if (!propagate_down[0]) return;
    float* dots = dots_.mutable_cpu_data();
    for (std::size_t g = 0; g < geometry_.groups(); ++g) {
      dots[g] = ops::normalize_group_dot(geometry_, x, dy, scale, g);
    }
    float* dx = bottom[0]->mutable_cpu_diff();
    for (std::size_t i = 0; i < bottom[0]->count(); ++i) {
      dx[i] = ops::normalize_backward(geometry_, x, dy, scale, norms, dots, i);
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::normalize_forward(geometry_, param_.norm_param().eps(), bottom[0]->gpu_data(),
                            blobs_[0]->gpu_data(), norms_.mutable_gpu_data(),
                            top[0]->mutable_gpu_data());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = bottom[0]->gpu_data();
    const float* dy = top[0]->gpu_diff();
    if (param_propagate_down(0)) {
      cuda::normalize_scale_backward(geometry_, x, dy, norms_.gpu_data(),
                                     blobs_[0]->mutable_gpu_diff());
    }
    if (!propagate_down[0]) return;
    cuda::normalize_backward(geometry_, x, dy, blobs_[0]->gpu_data(), norms_.gpu_data(),
                             dots_.mutable_gpu_data(), bottom[0]->mutable_gpu_diff());
  }
#endif

 private:
  void check_bottom(const BlobVec& bottom, const BlobVec& top) const {
    XTRAIN_CHECK(bottom[0]->num_axes() >= 2, where(), ": the bottom ", bottom[0]->shape_string(),
                 " needs at least 2 axes (items x channels [x positions])");
    XTRAIN_CHECK(bottom[0] != top[0], where(),
                 " cannot run in place (its gradient reads the bottom); give the top its own "
                 "name");
  }

  int channels_ = 0;
  ops::NormalizeGeometry geometry_;
  Blob norms_;              // one per group
  Blob dots_;               // one per group: sum of dy s x
  Blob channel_gradients_;  // one per channel: the scale gradient's parts
};

}  // namespace

void register_normalize_layer(LayerRegistry& registry) {
  add_layer<NormalizeLayer>(registry, "Normalize");
}

}  // namespace xtrain

// PReLU: a ReLU whose negative slope is learned, one per channel (axis 1) or
// one for all channels (prelu_param.channel_shared):
//   y = max(x, 0) + s_c min(x, 0)
//   dE/dx   = dE/dy * (x > 0 ? 1 : s_c)
//   dE/ds_c += sum over the elements of channel c of dE/dy * x * [x <= 0]
// Blob: the slopes, shape (C), or a 0-d scalar when shared; filled by
// prelu_param.filler, by default the constant 0.25. Both gradients read x; in
// place, x is kept for backward.
#include <string>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class PReLULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "PReLU"; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    check_axes(*bottom[0]);
    const PReLUParameter& prelu = param_.prelu_param();
    channels_ = bottom[0]->shape(1);
    channel_shared_ = prelu.channel_shared();
    FillerParameter default_filler;
    default_filler.set_type("constant");
    default_filler.set_value(0.25f);
    const std::vector<int> slope_shape =
        channel_shared_ ? std::vector<int>{} : std::vector<int>{channels_};
    setup_learnable_blobs(
        where(),
        {{"slope", slope_shape, prelu.has_filler() ? &prelu.filler() : &default_filler,
          "prelu_param.filler"}},
        channel_shared_ ? "(a single slope, as channel_shared is true)"
                        : "(one slope per channel of the bottom " + bottom[0]->shape_string() +
                              "); check channel_shared",
        &blobs_, random());
    set_param_propagate_down(0, true);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    check_axes(*bottom[0]);
    XTRAIN_CHECK(bottom[0]->shape(1) == channels_, where(), ": the bottom ",
                 bottom[0]->shape_string(), " has ", bottom[0]->shape(1),
                 " channels, but the layer was set up for ", channels_,
                 "; a PReLU layer cannot change its channel count after setup");
    NeuronLayer::reshape(bottom, top);
  }

 protected:
  void check_axes(const Blob& input) const {
    XTRAIN_CHECK(input.num_axes() >= 2, where(),
                 ": the bottom must have at least 2 axes (N, C, ...), ", "got shape ",
                 input.shape_string());
  }

  // The bottom as (outer, channels, inner): slope of element (n, c, i) is
  // slopes[c / channels_per_slope()].
  std::size_t outer(const Blob& input) const { return input.count(0, 1); }
  std::size_t inner(const Blob& input) const { return input.count(2); }
  std::size_t channels_per_slope() const { return channel_shared_ ? channels_ : 1; }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place(bottom, top);
    const float* x = bottom[0]->cpu_data();
    const float* slopes = blobs_[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    const std::size_t inner_size = inner(*bottom[0]);
    const ops::PReluForward prelu;
    for (std::size_t n = 0, i = 0; n < outer(*bottom[0]); ++n) {
      for (int c = 0; c < channels_; ++c) {
        const float slope = slopes[c / channels_per_slope()];
        for (std::size_t end = i + inner_size; i < end; ++i) y[i] = prelu(x[i], slope);
      }
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = kept_input_cpu(bottom, top);
    const float* dy = top[0]->cpu_diff();
    const float* slopes = blobs_[0]->cpu_data();
    const std::size_t inner_size = inner(*bottom[0]);
    const std::size_t outer_size = outer(*bottom[0]);
    // The slope gradient first: in place, dx overwrites dy.
    if (param_propagate_down(0)) {
      float* slope_diff = blobs_[0]->mutable_cpu_diff();
      const ops::PReluSlopeGradient gradient;
      for (std::size_t n = 0, i = 0; n < outer_size; ++n) {
        for (int c = 0; c < channels_; ++c) {
          float& diff = slope_diff[c / channels_per_slope()];
          for (std::size_t end = i + inner_size; i < end; ++i) diff += gradient(x[i], dy[i]);
        }
      }
    }
    if (propagate_down[0]) {
      float* dx = bottom[0]->mutable_cpu_diff();
      const ops::PReluBackward prelu;
      for (std::size_t n = 0, i = 0; n < outer_size; ++n) {
        for (int c = 0; c < channels_; ++c) {
          const float slope = slopes[c / channels_per_slope()];
          for (std::size_t end = i + inner_size; i < end; ++i) dx[i] = prelu(x[i], slope, dy[i]);
        }
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place_gpu(bottom, top);
    cuda::prelu_forward(bottom[0]->gpu_data(), blobs_[0]->gpu_data(), top[0]->mutable_gpu_data(),
                        outer(*bottom[0]), channels_, inner(*bottom[0]), channels_per_slope());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* x = kept_input_gpu(bottom, top);
    if (param_propagate_down(0)) {
      cuda::prelu_slope_gradient(x, top[0]->gpu_diff(), blobs_[0]->mutable_gpu_diff(),
                                 outer(*bottom[0]), channels_, inner(*bottom[0]),
                                 channels_per_slope());
    }
    if (propagate_down[0]) {
      cuda::prelu_backward(x, blobs_[0]->gpu_data(), top[0]->gpu_diff(),
                           bottom[0]->mutable_gpu_diff(), outer(*bottom[0]), channels_,
                           inner(*bottom[0]), channels_per_slope());
    }
  }
#endif

 private:
  int channels_ = 0;
  bool channel_shared_ = false;
};

}  // namespace

void register_prelu_layer(LayerRegistry& registry) { add_layer<PReLULayer>(registry, "PReLU"); }

}  // namespace xtrain

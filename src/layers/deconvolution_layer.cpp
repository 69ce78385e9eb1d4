// Deconvolution (Caffe type "Deconvolution"): the transpose of Convolution,
// used for learned upsampling. Its forward is a convolution's input gradient:
// every input pixel (y, x) scatters weight-scaled copies of its value onto a
// kh x kw patch of the output,
//   top[o, y*sh - ph + i*dh, x*sw - pw + j*dw] +=
//       sum over c in group(o) of weight[c, o mod (num_output/group), i, j] * bottom[c, y, x]
// (contributions falling outside the output are dropped), plus bias[o], with
//   out = stride * (in - 1) + dilation * (k - 1) + 1 - 2 * pad.
// Blobs: weight (channels, num_output / group, kh, kw) as Caffe stores them,
// bias (num_output). A "bilinear" weight_filler with stride = factor and
// kernel = 2 * factor - factor % 2 makes it bilinear upsampling.
// Backward: the bottom gradient is the convolution of the top gradient with
// the same weights; the weight gradient pairs the im2col columns of the top
// gradient with the bottom.
#include <vector>

#include "layers/base_convolution_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class DeconvolutionLayer : public BaseConvolutionLayer {
 public:
  explicit DeconvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer(param) {}

  const char* type() const override { return "Deconvolution"; }

 protected:
  bool reverses_convolution() const override { return true; }
  int output_size(int input, int kernel_extent, int pad, int stride) const override {
    return stride * (input - 1) + kernel_extent - 2 * pad;
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* weights = blobs_[0]->cpu_data();
    const float* bias = bias_term() ? blobs_[1]->cpu_data() : nullptr;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      const float* input = bottom[i]->cpu_data();
      float* output = top[i]->mutable_cpu_data();
      for (int n = 0; n < num(); ++n) {
        float* image_output = output + n * top_dim();
        convolve_adjoint(input + n * bottom_dim(), weights, image_output);
        if (bias) add_bias(bias, image_output);
      }
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* weights = blobs_[0]->cpu_data();
    float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr;
    float* bias_diff =
        bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_cpu_diff() : nullptr;
    for (std::size_t i = 0; i < top.size(); ++i) {
      const float* output_diff = top[i]->cpu_diff();
      if (bias_diff) {
        for (int n = 0; n < num(); ++n) bias_gradient(output_diff + n * top_dim(), bias_diff);
      }
      if (!weight_diff && !propagate_down[i]) continue;
      const float* input = bottom[i]->cpu_data();
      float* input_diff = propagate_down[i] ? bottom[i]->mutable_cpu_diff() : nullptr;
      for (int n = 0; n < num(); ++n) {
        const float* image_output_diff = output_diff + n * top_dim();
        if (weight_diff) {
          weight_gradient(image_output_diff, input + n * bottom_dim(), weight_diff);
        }
        if (input_diff) {
          convolve(image_output_diff, weights, input_diff + n * bottom_dim(),
                   /*columns_ready=*/weight_diff != nullptr);
        }
      }
    }
  }
};

}  // namespace

void register_deconvolution_layer(LayerRegistry& registry) {
  add_layer<DeconvolutionLayer>(registry, "Deconvolution");
}

}  // namespace xtrain

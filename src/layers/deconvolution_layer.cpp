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
// Computed by the convolution engine of the transposed view (see
// base_convolution_layer.hpp): forward is its backward-data, the bottom
// gradient its forward, and the weight gradient its backward-weights with
// the top gradient as the view's input. On a GPU the same three passes of
// the view run on cuDNN, the bias (over the view's input) by cudnnAddTensor
// and cudnnConvolutionBackwardBias.
#include <vector>

#include "core/rounded_operand.hpp"
#include "layers/base_convolution_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/channel_bias.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/cudnn_convolution.hpp"
#endif

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

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    BaseConvolutionLayer::reshape(bottom, top);
    if (bias_term() && top_bias_.pixels() != top_spatial()) {
      top_bias_ = ChannelBias(num_output(), top_spatial());
    }
  }

  // In a 16-bit precision the engine multiplies operands rounded to the
  // type, as Convolution's do.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const NumberType round_to = forward_operands_to_round(precision().forward_type);
    const RoundedOperand weights(device(), round_to, blobs_[0]->cpu_data(), blobs_[0]->count(),
                                 OperandSlot::kWeights, NumberType::kFloat32);
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      float* output = top[i]->mutable_cpu_data();
      const RoundedOperand input(device(), round_to, bottom[i]->cpu_data(), bottom[i]->count(),
                                 OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
      engine().backward_data(input.get(), weights.get(), output);
      if (!bias_term()) continue;
      const float* bias = blobs_[1]->cpu_data();
      for (int n = 0; n < num(); ++n) top_bias_.add(bias, output + n * top_dim());
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const NumberType round_to = backward_operands_to_round(precision().backward_type);
    const RoundedOperand weights_operand(device(), round_to, blobs_[0]->cpu_data(),
                                         blobs_[0]->count(), OperandSlot::kWeights,
                                         NumberType::kFloat32);
    const float* weights = weights_operand.get();
    float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr;
    float* bias_diff =
        bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_cpu_diff() : nullptr;
    for (std::size_t i = 0; i < top.size(); ++i) {
      const RoundedOperand gradient(device(), round_to, top[i]->cpu_diff(), top[i]->count(),
                                    OperandSlot::kGradient,
                                    top_gradient_arrives_in(static_cast<int>(i)));
      const RoundedOperand input(device(), round_to, bottom[i]->cpu_data(), bottom[i]->count(),
                                 OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
      const float* output_diff = gradient.get();
      if (bias_diff) {
        for (int n = 0; n < num(); ++n) {
          top_bias_.accumulate_gradient(output_diff + n * top_dim(), bias_diff);
        }
      }
      if (weight_diff) engine().backward_weights(output_diff, input.get(), weight_diff, nullptr);
      if (propagate_down[i]) {
        engine().forward(output_diff, weights, nullptr, bottom[i]->mutable_cpu_diff());
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const NumberType round_to = forward_operands_to_round(precision().forward_type);
    const RoundedOperand weights(device(), round_to, blobs_[0]->gpu_data(), blobs_[0]->count(),
                                 OperandSlot::kWeights, NumberType::kFloat32);
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      float* output = top[i]->mutable_gpu_data();
      const RoundedOperand input(device(), round_to, bottom[i]->gpu_data(), bottom[i]->count(),
                                 OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
      cudnn().backward_data(input.get(), weights.get(), output);
      if (bias_term()) {
        cudnn().add_bias(cuda::CudnnConvolution::Side::kInput, blobs_[1]->gpu_data(), output);
      }
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const NumberType round_to = backward_operands_to_round(precision().backward_type);
    const RoundedOperand weights_operand(device(), round_to, blobs_[0]->gpu_data(),
                                         blobs_[0]->count(), OperandSlot::kWeights,
                                         NumberType::kFloat32);
    const float* weights = weights_operand.get();
    float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_gpu_diff() : nullptr;
    float* bias_diff =
        bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_gpu_diff() : nullptr;
    for (std::size_t i = 0; i < top.size(); ++i) {
      const RoundedOperand gradient(device(), round_to, top[i]->gpu_diff(), top[i]->count(),
                                    OperandSlot::kGradient,
                                    top_gradient_arrives_in(static_cast<int>(i)));
      const RoundedOperand input(device(), round_to, bottom[i]->gpu_data(), bottom[i]->count(),
                                 OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
      const float* output_diff = gradient.get();
      if (bias_diff) {
        cudnn().accumulate_bias_gradient(cuda::CudnnConvolution::Side::kInput, output_diff,
                                         bias_diff);
      }
      // The view's input is the top: its "x" is the top gradient, its "dy"
      // the bottom's values.
      if (weight_diff) cudnn().backward_filter(output_diff, input.get(), weight_diff);
      if (propagate_down[i]) {
        cudnn().forward(output_diff, weights, nullptr, bottom[i]->mutable_gpu_diff());
      }
    }
  }
#endif

 private:
  ChannelBias top_bias_;  // over the top's pixels
};

}  // namespace

void register_deconvolution_layer(LayerRegistry& registry) {
  add_layer<DeconvolutionLayer>(registry, "Deconvolution");
}

}  // namespace xtrain

#include "layers/convolution_layer.hpp"

#include "core/rounded_operand.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/cudnn_convolution.hpp"
#endif

namespace xtrain {

// In a 16-bit precision the engine multiplies operands rounded to the type
// (RoundedOperand copies them; a bf16 engine rounds them itself).
void ConvolutionLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const NumberType round_to = forward_operands_to_round(precision().forward_type);
  const RoundedOperand weights(device(), round_to, blobs_[0]->cpu_data(), blobs_[0]->count(),
                               OperandSlot::kWeights, NumberType::kFloat32);
  const float* bias = bias_term() ? blobs_[1]->cpu_data() : nullptr;
  const bool blocked_ok = engine().accepts_channel_blocked();
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    ConvolutionEngine::Layouts layouts;
    if (blocked_ok) {
      layouts.bottom = bottom[i]->data_layout();
      if (writes_channel_blocked_top(static_cast<int>(i)) && top[i]->can_be_channel_blocked()) {
        layouts.top = MemoryLayout::kChannelBlocked;
      }
    }
    const RoundedOperand input(device(), round_to, bottom[i]->cpu_data_in(layouts.bottom),
                               bottom[i]->count(), OperandSlot::kInput,
                               bottom_arrives_in(static_cast<int>(i)));
    engine().forward_in(layouts, input.get(), weights.get(), bias,
                        top[i]->overwrite_cpu_data_in(layouts.top));
  }
}

void ConvolutionLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const NumberType round_to = backward_operands_to_round(precision().backward_type);
  const RoundedOperand weights(device(), round_to, blobs_[0]->cpu_data(), blobs_[0]->count(),
                               OperandSlot::kWeights, NumberType::kFloat32);
  float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr;
  float* bias_diff =
      bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_cpu_diff() : nullptr;
  const bool blocked_ok = engine().accepts_channel_blocked();
  for (std::size_t i = 0; i < top.size(); ++i) {
    // The activations as they are; the bottom's gradient in its values' layout.
    ConvolutionEngine::Layouts layouts;
    if (blocked_ok) {
      layouts.bottom = bottom[i]->data_layout();
      layouts.top = top[i]->diff_layout();
    }
    const RoundedOperand input(device(), round_to, bottom[i]->cpu_data_in(layouts.bottom),
                               bottom[i]->count(), OperandSlot::kInput,
                               bottom_arrives_in(static_cast<int>(i)));
    const RoundedOperand top_diff(device(), round_to, top[i]->cpu_diff_in(layouts.top),
                                  top[i]->count(), OperandSlot::kGradient,
                                  top_gradient_arrives_in(static_cast<int>(i)));
    engine().backward_in(
        layouts, input.get(), top_diff.get(), weights.get(), weight_diff, bias_diff,
        propagate_down[i] ? bottom[i]->overwrite_cpu_diff_in(layouts.bottom) : nullptr);
  }
}

#ifdef XTRAIN_USE_CUDA
void ConvolutionLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const NumberType round_to = forward_operands_to_round(precision().forward_type);
  const RoundedOperand weights(device(), round_to, blobs_[0]->gpu_data(), blobs_[0]->count(),
                               OperandSlot::kWeights, NumberType::kFloat32);
  const float* bias = bias_term() ? blobs_[1]->gpu_data() : nullptr;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const RoundedOperand input(device(), round_to, bottom[i]->gpu_data(), bottom[i]->count(),
                               OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
    cudnn().forward(input.get(), weights.get(), bias, top[i]->mutable_gpu_data());
  }
}

void ConvolutionLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const NumberType round_to = backward_operands_to_round(precision().backward_type);
  const RoundedOperand weights(device(), round_to, blobs_[0]->gpu_data(), blobs_[0]->count(),
                               OperandSlot::kWeights, NumberType::kFloat32);
  float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_gpu_diff() : nullptr;
  float* bias_diff =
      bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_gpu_diff() : nullptr;
  using Side = cuda::CudnnConvolution::Side;
  for (std::size_t i = 0; i < top.size(); ++i) {
    const RoundedOperand top_diff(device(), round_to, top[i]->gpu_diff(), top[i]->count(),
                                  OperandSlot::kGradient,
                                  top_gradient_arrives_in(static_cast<int>(i)));
    if (bias_diff) cudnn().accumulate_bias_gradient(Side::kOutput, top_diff.get(), bias_diff);
    if (weight_diff) {
      const RoundedOperand input(device(), round_to, bottom[i]->gpu_data(), bottom[i]->count(),
                                 OperandSlot::kInput, bottom_arrives_in(static_cast<int>(i)));
      cudnn().backward_filter(input.get(), top_diff.get(), weight_diff);
    }
    if (propagate_down[i]) {
      cudnn().backward_data(top_diff.get(), weights.get(), bottom[i]->mutable_gpu_diff());
    }
  }
}
#endif

bool ConvolutionLayer::reads_channel_blocked_bottom(int bottom_index) const {
  (void)bottom_index;
  return has_engine() && blobs_are_nchw() && engine().accepts_channel_blocked();
}

bool ConvolutionLayer::can_write_channel_blocked_top(
    int top_index, const std::vector<bool>& blocked_bottoms) const {
  (void)top_index;
  (void)blocked_bottoms;
  return has_engine() && blobs_are_nchw() && engine().prefers_channel_blocked();
}

void register_convolution_layer(LayerRegistry& registry) {
  add_layer<ConvolutionLayer>(registry, "Convolution");
}

}  // namespace xtrain

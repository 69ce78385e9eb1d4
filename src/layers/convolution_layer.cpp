#include "layers/convolution_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/cudnn_convolution.hpp"
#endif

namespace xtrain {

void ConvolutionLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const float* weights = blobs_[0]->cpu_data();
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
    engine().forward_in(layouts, bottom[i]->cpu_data_in(layouts.bottom), weights, bias,
                        top[i]->overwrite_cpu_data_in(layouts.top));
  }
}

void ConvolutionLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const float* weights = blobs_[0]->cpu_data();
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
    engine().backward_in(
        layouts, bottom[i]->cpu_data_in(layouts.bottom), top[i]->cpu_diff_in(layouts.top), weights,
        weight_diff, bias_diff,
        propagate_down[i] ? bottom[i]->overwrite_cpu_diff_in(layouts.bottom) : nullptr);
  }
}

#ifdef XTRAIN_USE_CUDA
void ConvolutionLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const float* weights = blobs_[0]->gpu_data();
  const float* bias = bias_term() ? blobs_[1]->gpu_data() : nullptr;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    cudnn().forward(bottom[i]->gpu_data(), weights, bias, top[i]->mutable_gpu_data());
  }
}

void ConvolutionLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const float* weights = blobs_[0]->gpu_data();
  float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_gpu_diff() : nullptr;
  float* bias_diff =
      bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_gpu_diff() : nullptr;
  using Side = cuda::CudnnConvolution::Side;
  for (std::size_t i = 0; i < top.size(); ++i) {
    const float* top_diff = top[i]->gpu_diff();
    if (bias_diff) cudnn().accumulate_bias_gradient(Side::kOutput, top_diff, bias_diff);
    if (weight_diff) cudnn().backward_filter(bottom[i]->gpu_data(), top_diff, weight_diff);
    if (propagate_down[i]) {
      cudnn().backward_data(top_diff, weights, bottom[i]->mutable_gpu_diff());
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

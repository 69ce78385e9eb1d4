#include "layers/convolution_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {

void ConvolutionLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const float* weights = blobs_[0]->cpu_data();
  const float* bias = bias_term() ? blobs_[1]->cpu_data() : nullptr;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    engine().forward(bottom[i]->cpu_data(), weights, bias, top[i]->mutable_cpu_data());
  }
}

void ConvolutionLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const float* weights = blobs_[0]->cpu_data();
  float* weight_diff = param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr;
  float* bias_diff =
      bias_term() && param_propagate_down(1) ? blobs_[1]->mutable_cpu_diff() : nullptr;
  for (std::size_t i = 0; i < top.size(); ++i) {
    engine().backward(bottom[i]->cpu_data(), top[i]->cpu_diff(), weights, weight_diff, bias_diff,
                      propagate_down[i] ? bottom[i]->mutable_cpu_diff() : nullptr);
  }
}

void register_convolution_layer(LayerRegistry& registry) {
  add_layer<ConvolutionLayer>(registry, "Convolution");
}

}  // namespace xtrain

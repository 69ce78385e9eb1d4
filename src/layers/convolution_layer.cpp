#include "layers/convolution_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {

void ConvolutionLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  const float* weights = blobs_[0]->cpu_data();
  const float* bias = bias_term() ? blobs_[1]->cpu_data() : nullptr;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    const float* input = bottom[i]->cpu_data();
    float* output = top[i]->mutable_cpu_data();
    for (int n = 0; n < num(); ++n) {
      float* image_output = output + n * top_dim();
      convolve(input + n * bottom_dim(), weights, image_output);
      if (bias) add_bias(bias, image_output);
    }
  }
}

void ConvolutionLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
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
      if (weight_diff) {
        weight_gradient(input + n * bottom_dim(), output_diff + n * top_dim(), weight_diff);
      }
      if (input_diff) {
        convolve_adjoint(output_diff + n * top_dim(), weights, input_diff + n * bottom_dim());
      }
    }
  }
}

void register_convolution_layer(LayerRegistry& registry) {
  add_layer<ConvolutionLayer>(registry, "Convolution");
}

}  // namespace xtrain

// Softmax: see softmax_layer.hpp for the math. The loops run over channels
// outside and inner positions inside, so memory is read in order whatever the
// axis.
#include "layers/softmax_layer.hpp"

#include <algorithm>
#include <cmath>

#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/elementwise_kernels.hpp"
#endif

namespace xtrain {

void SoftmaxLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& input = *bottom[0];
  axis_ = input.canonical_axis_index(param_.softmax_param().axis());
  outer_num_ = input.count(0, axis_);
  channels_ = static_cast<std::size_t>(input.shape(axis_));
  inner_num_ = input.count(axis_ + 1);
  top[0]->reshape_like(input);
  per_position_.resize(inner_num_);
}

void SoftmaxLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (channels_ == 0) return;
  const std::size_t inner = inner_num_;
  const std::size_t block = channels_ * inner;
  float* scratch = per_position_.data();
  const float* bottom_data = bottom[0]->cpu_data();
  float* top_data = top[0]->mutable_cpu_data();
  for (std::size_t o = 0; o < outer_num_; ++o) {
    const float* x = bottom_data + o * block;
    float* y = top_data + o * block;
    std::copy_n(x, inner, scratch);
    for (std::size_t c = 1; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i) scratch[i] = std::max(scratch[i], x[c * inner + i]);
    }
    // y and x may be the same array: each element is read before it is written.
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i)
        y[c * inner + i] = std::exp(x[c * inner + i] - scratch[i]);
    }
    std::copy_n(y, inner, scratch);
    for (std::size_t c = 1; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i) scratch[i] += y[c * inner + i];
    }
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i) y[c * inner + i] /= scratch[i];
    }
  }
}

void SoftmaxLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0] || channels_ == 0) return;
  const std::size_t inner = inner_num_;
  const std::size_t block = channels_ * inner;
  float* dot = per_position_.data();
  const float* top_data = top[0]->cpu_data();
  const float* top_diff = top[0]->cpu_diff();
  float* bottom_diff = bottom[0]->mutable_cpu_diff();
  for (std::size_t o = 0; o < outer_num_; ++o) {
    const float* y = top_data + o * block;
    const float* dy = top_diff + o * block;
    float* dx = bottom_diff + o * block;
    std::fill_n(dot, inner, 0.0f);
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i) dot[i] += dy[c * inner + i] * y[c * inner + i];
    }
    // dx may be dy (in place): the dot products are complete before any write.
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < inner; ++i) {
        dx[c * inner + i] = (dy[c * inner + i] - dot[i]) * y[c * inner + i];
      }
    }
  }
}

#ifdef XTRAIN_USE_CUDA
void SoftmaxLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  cuda::softmax_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), outer_num_, channels_,
                        inner_num_);
}

void SoftmaxLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  cuda::softmax_backward(top[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                         outer_num_, channels_, inner_num_);
}
#endif

void register_softmax_layer(LayerRegistry& registry) {
  add_layer<SoftmaxLayer>(registry, "Softmax");
}

}  // namespace xtrain

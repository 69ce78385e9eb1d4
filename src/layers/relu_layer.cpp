// ReLU (leaky when relu_param.negative_slope = s is non-zero):
//   y = x > 0 ? x : s * x
//   dE/dx = dE/dy * ([x > 0] + s * [x <= 0])
// Works in place: the backward pass then reads y instead of x, which has the
// same sign for s >= 0.
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ReLULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ReLU"; }

 protected:
  float negative_slope() const { return param_.relu_param().negative_slope(); }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_cpu(bottom[0]->count(), ops::ReluForward{negative_slope()},
                   top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), ops::ReluBackward{negative_slope()},
                   bottom[0]->mutable_cpu_diff(), bottom[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::relu_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                       negative_slope());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::relu_backward(bottom[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                        bottom[0]->count(), negative_slope());
  }
#endif
};

}  // namespace

void register_relu_layer(LayerRegistry& registry) { add_layer<ReLULayer>(registry, "ReLU"); }

}  // namespace xtrain

// ELU (elu_param.alpha, default 1):
//   y = x > 0 ? x : alpha (e^x - 1)
//   dE/dx = dE/dy * (x > 0 ? 1 : alpha + y)
// In place the gradient reads y for x: same sign when alpha >= 0, so only a
// negative alpha needs x kept for backward.
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ELULayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ELU"; }

 protected:
  float alpha() const { return param_.elu_param().alpha(); }
  bool keeps_input() const { return alpha() < 0; }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (keeps_input()) keep_input_if_in_place(bottom, top);
    ops::apply_cpu(bottom[0]->count(), ops::EluForward{alpha()}, top[0]->mutable_cpu_data(),
                   bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* input = keeps_input() ? kept_input_cpu(bottom, top) : bottom[0]->cpu_data();
    ops::apply_cpu(bottom[0]->count(), ops::EluBackward{alpha()}, bottom[0]->mutable_cpu_diff(),
                   input, top[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (keeps_input()) keep_input_if_in_place_gpu(bottom, top);
    cuda::elu_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                      alpha());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* input = keeps_input() ? kept_input_gpu(bottom, top) : bottom[0]->gpu_data();
    cuda::elu_backward(input, top[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                       bottom[0]->count(), alpha());
  }
#endif
};

}  // namespace

void register_elu_layer(LayerRegistry& registry) { add_layer<ELULayer>(registry, "ELU"); }

}  // namespace xtrain

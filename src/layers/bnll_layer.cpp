// BNLL (binomial normal log likelihood, "softplus"):
//   y = ln(1 + e^x), computed as x + ln(1 + e^-x) for x > 0 so e^x never overflows
//   dE/dx = dE/dy * e^x / (1 + e^x), with x capped at 50 (beyond it the ratio is 1)
// The gradient reads x; in place, x is kept for backward.
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class BNLLLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "BNLL"; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place(bottom, top);
    ops::apply_cpu(bottom[0]->count(), ops::BnllForward{}, top[0]->mutable_cpu_data(),
                   bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), ops::BnllBackward{}, bottom[0]->mutable_cpu_diff(),
                   kept_input_cpu(bottom, top), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place_gpu(bottom, top);
    cuda::bnll_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::bnll_backward(kept_input_gpu(bottom, top), top[0]->gpu_diff(),
                        bottom[0]->mutable_gpu_diff(), bottom[0]->count());
  }
#endif
};

}  // namespace

void register_bnll_layer(LayerRegistry& registry) { add_layer<BNLLLayer>(registry, "BNLL"); }

}  // namespace xtrain

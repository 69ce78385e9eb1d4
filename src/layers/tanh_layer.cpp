// TanH:
//   y = tanh(x)
//   dE/dx = dE/dy * (1 - y^2)
// The backward pass reads only the output, so the layer works in place.
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class TanHLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "TanH"; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_cpu(bottom[0]->count(), ops::TanhForward{}, top[0]->mutable_cpu_data(),
                   bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), ops::TanhBackward{}, bottom[0]->mutable_cpu_diff(),
                   top[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::tanh_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::tanh_backward(top[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                        bottom[0]->count());
  }
#endif
};

}  // namespace

void register_tanh_layer(LayerRegistry& registry) { add_layer<TanHLayer>(registry, "TanH"); }

}  // namespace xtrain

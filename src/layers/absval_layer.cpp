// AbsVal:
//   y = |x|
//   dE/dx = dE/dy * sign(x)        (sign(0) = 0)
// The gradient needs the sign of x, which y has lost, so the layer cannot run
// in place (Caffe refuses it too).
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class AbsValLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "AbsVal"; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    check_not_in_place(bottom, top);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_cpu(bottom[0]->count(), ops::AbsForward{}, top[0]->mutable_cpu_data(),
                   bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), ops::AbsBackward{}, bottom[0]->mutable_cpu_diff(),
                   bottom[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::absval_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::absval_backward(bottom[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                          bottom[0]->count());
  }
#endif
};

}  // namespace

void register_absval_layer(LayerRegistry& registry) { add_layer<AbsValLayer>(registry, "AbsVal"); }

}  // namespace xtrain

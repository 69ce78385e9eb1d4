// ReLU (leaky when relu_param.negative_slope = s is non-zero):
//   y = x > 0 ? x : s * x
//   dE/dx = dE/dy * ([x > 0] + s * [x <= 0])
// Works in place: the backward pass then reads y instead of x, which has the
// same sign for s >= 0.
#include "core/elementwise_ops.hpp"
#include "core/engine_hooks.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ReLULayer : public NeuronLayer, public EngineHooks {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "ReLU"; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::reshape(bottom, top);
    in_place_ = in_place(bottom, top);
  }

  // Elementwise, so any layout will do as long as x, y and their gradients
  // share it: in place, they are one blob.
  bool reads_channel_blocked_bottom(int bottom_index) const override {
    (void)bottom_index;
    return in_place_;
  }

 protected:
  float negative_slope() const { return param_.relu_param().negative_slope(); }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const MemoryLayout layout = in_place_ ? bottom[0]->data_layout() : MemoryLayout::kPlain;
    ops::apply_cpu(bottom[0]->count(), ops::ReluForward{negative_slope()},
                   top[0]->mutable_cpu_data_in(layout), bottom[0]->cpu_data_in(layout));
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const MemoryLayout layout = in_place_ ? top[0]->diff_layout() : MemoryLayout::kPlain;
    ops::apply_cpu(bottom[0]->count(), ops::ReluBackward{negative_slope()},
                   bottom[0]->mutable_cpu_diff_in(layout), bottom[0]->cpu_data_in(layout),
                   top[0]->cpu_diff_in(layout));
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

 private:
  bool in_place_ = false;
};

}  // namespace

void register_relu_layer(LayerRegistry& registry) { add_layer<ReLULayer>(registry, "ReLU"); }

}  // namespace xtrain

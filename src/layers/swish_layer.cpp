// Swish (swish_param.beta, default 1; Ramachandran, Zoph and Le, 2017):
//   s = sigmoid(beta x),  y = x s
//   dE/dx = dE/dy * (s + beta x s (1 - s)) = dE/dy * (beta y + s (1 - beta y))
// Forward keeps s; backward reads y and s, never x, so the layer runs in
// place. Caffe computes s with its Sigmoid layer on beta x (the tanh form of
// ops::SigmoidForward) and the CPU gradient in double; so do we, on both
// devices (ops::SwishSigmoid, ops::SwishBackward).
#include "core/device_apply.hpp"
#include "core/engine_hooks.hpp"
#include "layers/any_device_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class SwishLayer : public AnyDeviceLayer<NeuronLayer>, public EngineHooks {
 public:
  using AnyDeviceLayer::AnyDeviceLayer;
  const char* type() const override { return "Swish"; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::reshape(bottom, top);
    sigmoid_.reshape_like(*bottom[0]);
  }

  bool backward_touches_bottom_data(int) const override { return false; }
  std::size_t buffer_bytes() const override { return sigmoid_.count() * sizeof(float); }

 private:
  float beta() const { return param_.swish_param().beta(); }

  void forward_on(const BlobVec& bottom, const BlobVec& top) override {
    const Device& on = device();
    const std::size_t n = bottom[0]->count();
    const float* x = ops::data_on(on, *bottom[0]);
    float* s = ops::mutable_data_on(on, sigmoid_);
    ops::apply_on(on, n, ops::SwishSigmoid{beta()}, s, x);
    // In place, y overwrites x element by element after reading it.
    ops::apply_on(on, n, ops::Multiply{}, ops::mutable_data_on(on, *top[0]), x,
                  static_cast<const float*>(s));
  }

  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const Device& on = device();
    ops::apply_on(on, bottom[0]->count(), ops::SwishBackward{beta()},
                  ops::mutable_diff_on(on, *bottom[0]), ops::data_on(on, *top[0]),
                  ops::data_on(on, sigmoid_), ops::diff_on(on, *top[0]));
  }

  Blob sigmoid_;  // s = sigmoid(beta x), from forward
};

}  // namespace

void register_swish_layer(LayerRegistry& registry) { add_layer<SwishLayer>(registry, "Swish"); }

}  // namespace xtrain

// GELU (xtrain's own type "GELU", beyond Caffe's set; no parameters):
//   y = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2))),
//   dE/dx = dE/dy (Phi(x) + x phi(x)),
// PyTorch's nn.GELU() (the exact form, not the tanh approximation), the
// activation of ConvNeXt-style nets, which the ONNX import reads from the
// five nodes torch.onnx.export writes for it. The arithmetic is
// ops::GeluForward and ops::GeluBackward (core/elementwise_ops.hpp), the
// same on both devices. The gradient reads x, so in place the layer keeps a
// copy of x from forward.
#include "core/device_apply.hpp"
#include "core/engine_hooks.hpp"
#include "layers/any_device_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class GeluLayer : public AnyDeviceLayer<NeuronLayer>, public EngineHooks {
 public:
  using AnyDeviceLayer::AnyDeviceLayer;
  const char* type() const override { return "GELU"; }

  std::size_t buffer_bytes() const override { return input_copy_.count() * sizeof(float); }

 private:
  void forward_on(const BlobVec& bottom, const BlobVec& top) override {
    const Device& on = device();
    const std::size_t n = bottom[0]->count();
    if (in_place(bottom, top)) {
      input_copy_.reshape_like(*bottom[0]);
      ops::apply_on(on, n, ops::ScaleBy{1.0f}, ops::mutable_data_on(on, input_copy_),
                    ops::data_on(on, *bottom[0]));
    }
    ops::apply_on(on, n, ops::GeluForward{}, ops::mutable_data_on(on, *top[0]),
                  ops::data_on(on, *bottom[0]));
  }

  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const Device& on = device();
    const Blob& x = in_place(bottom, top) ? input_copy_ : *bottom[0];
    ops::apply_on(on, bottom[0]->count(), ops::GeluBackward{}, ops::mutable_diff_on(on, *bottom[0]),
                  ops::data_on(on, x), ops::diff_on(on, *top[0]));
  }

  Blob input_copy_;  // x, when the layer runs in place
};

}  // namespace

void register_gelu_layer(LayerRegistry& registry) { add_layer<GeluLayer>(registry, "GELU"); }

}  // namespace xtrain

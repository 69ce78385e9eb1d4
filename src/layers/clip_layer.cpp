// Clip (clip_param { min: lo max: hi }, both required as in Caffe):
//   y = max(lo, min(x, hi))
//   dE/dx = dE/dy * [lo <= x <= hi]
// The gradient passes at the bounds themselves (Caffe's >= and <=), and is
// zero outside them. Caffe does not check lo <= hi; neither do we: with
// lo > hi every output is lo.
// Caffe's quirk in place: backward then reads y instead of x, and a clipped
// y sits on a bound, so every element passes its gradient. Kept for
// compatibility; give the top its own name for the true gradient.
#include "core/device_apply.hpp"
#include "layers/any_device_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class ClipLayer : public AnyDeviceLayer<NeuronLayer> {
 public:
  using AnyDeviceLayer::AnyDeviceLayer;
  const char* type() const override { return "Clip"; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    (void)top;
    XTRAIN_CHECK(param_.has_clip_param(), where(),
                 " needs clip_param { min: ... max: ... } (Caffe requires both bounds)");
    XTRAIN_CHECK(param_.clip_param().min() <= param_.clip_param().max(), where(),
                 ": clip_param.min ", param_.clip_param().min(), " is above its max ",
                 param_.clip_param().max(),
                 ", which would give every value the min; give min <= max");
  }

 protected:
  ops::ClipForward forward_op() const {
    return {param_.clip_param().min(), param_.clip_param().max()};
  }
  ops::ClipBackward backward_op() const {
    return {param_.clip_param().min(), param_.clip_param().max()};
  }

 private:
  void forward_on(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_on(device(), bottom[0]->count(), forward_op(),
                  ops::mutable_data_on(device(), *top[0]), ops::data_on(device(), *bottom[0]));
  }
  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_on(device(), bottom[0]->count(), backward_op(),
                  ops::mutable_diff_on(device(), *bottom[0]), ops::data_on(device(), *bottom[0]),
                  ops::diff_on(device(), *top[0]));
  }
};

}  // namespace

void register_clip_layer(LayerRegistry& registry) { add_layer<ClipLayer>(registry, "Clip"); }

}  // namespace xtrain

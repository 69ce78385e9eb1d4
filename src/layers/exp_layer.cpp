// Exp (exp_param: base B, scale a, shift b; defaults -1 meaning e, 1, 0):
//   y = B^(a x + b) = c e^(k x),   k = a ln(B),  c = B^b
//   dE/dx = dE/dy * k y
// The gradient reads only y, so the layer works in place.
#include <cmath>

#include "layers/builtin_layers.hpp"
#include "layers/elementwise_neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

constexpr char kExp[] = "Exp";

class ExpLayer : public ElementwiseNeuronLayer<kExp, ops::ExpForward, ops::ExpBackward,
                                               BackwardReads::kOutput> {
 public:
  using ElementwiseNeuronLayer::ElementwiseNeuronLayer;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    ElementwiseNeuronLayer::layer_setup(bottom, top);
    const ExpParameter& exp_param = param_.exp_param();
    const float base = exp_param.base();
    const float log_base = natural_log_of_base(base, where(), "exp_param");
    const bool natural = base == -1.0f;
    XTRAIN_CHECK(std::isfinite(log_base), where(), ": exp_param.base ", base,
                 " has no finite logarithm; use a finite positive base");
    const float inner_scale = log_base * exp_param.scale();  // k
    const float shift = exp_param.shift();
    const float outer_scale =  // c
        shift == 0.0f ? 1.0f : (natural ? std::exp(shift) : std::pow(base, shift));
    forward_ = ops::ExpForward{inner_scale, outer_scale};
    backward_ = ops::ExpBackward{inner_scale};
  }
};

}  // namespace

void register_exp_layer(LayerRegistry& registry) { add_layer<ExpLayer>(registry, kExp); }

}  // namespace xtrain

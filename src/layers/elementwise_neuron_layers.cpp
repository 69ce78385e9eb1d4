// The neuron layers that are one pair of functors (core/elementwise_ops.hpp)
// and nothing more, through ElementwiseNeuronLayer.
//
// Sigmoid:  y = 1 / (1 + e^-x)          dE/dx = dE/dy * y * (1 - y)
// TanH:     y = tanh(x)                 dE/dx = dE/dy * (1 - y^2)
//   Both gradients read only the output, so the layers work in place.
// BNLL (binomial normal log likelihood, "softplus"):
//   y = ln(1 + e^x), computed as x + ln(1 + e^-x) for x > 0 so e^x never overflows
//   dE/dx = dE/dy * e^x / (1 + e^x), with x capped at 50 (beyond it the ratio is 1)
//   The gradient reads x; in place, x is kept for backward.
// AbsVal:   y = |x|                     dE/dx = dE/dy * sign(x)   (sign(0) = 0)
//   The gradient needs the sign of x, which y has lost, so the layer cannot
//   run in place (Caffe refuses it too).
#include "layers/builtin_layers.hpp"
#include "layers/elementwise_neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

constexpr char kSigmoid[] = "Sigmoid";
constexpr char kTanH[] = "TanH";
constexpr char kBNLL[] = "BNLL";
constexpr char kAbsVal[] = "AbsVal";

using SigmoidLayer = ElementwiseNeuronLayer<kSigmoid, ops::SigmoidForward, ops::SigmoidBackward,
                                            BackwardReads::kOutput>;
using TanHLayer =
    ElementwiseNeuronLayer<kTanH, ops::TanhForward, ops::TanhBackward, BackwardReads::kOutput>;
using BNLLLayer =
    ElementwiseNeuronLayer<kBNLL, ops::BnllForward, ops::BnllBackward, BackwardReads::kInput>;
using AbsValLayer =
    ElementwiseNeuronLayer<kAbsVal, ops::AbsForward, ops::AbsBackward, BackwardReads::kInputApart>;

}  // namespace

void register_sigmoid_layer(LayerRegistry& registry) {
  add_layer<SigmoidLayer>(registry, kSigmoid);
}
void register_tanh_layer(LayerRegistry& registry) { add_layer<TanHLayer>(registry, kTanH); }
void register_bnll_layer(LayerRegistry& registry) { add_layer<BNLLLayer>(registry, kBNLL); }
void register_absval_layer(LayerRegistry& registry) { add_layer<AbsValLayer>(registry, kAbsVal); }

}  // namespace xtrain

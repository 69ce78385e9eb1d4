// Log (log_param: base B, scale a, shift b; defaults -1 meaning e, 1, 0):
//   y = log_B(a x + b) = ln(a x + b) / ln(B)
//   dE/dx = dE/dy * a / (ln(B) (a x + b))
// The gradient reads x; in place, x is kept for backward.
#include <cmath>

#include "layers/builtin_layers.hpp"
#include "layers/elementwise_neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

constexpr char kLog[] = "Log";

class LogLayer : public ElementwiseNeuronLayer<kLog, ops::LogForward, ops::LogBackward,
                                               BackwardReads::kInput> {
 public:
  using ElementwiseNeuronLayer::ElementwiseNeuronLayer;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    ElementwiseNeuronLayer::layer_setup(bottom, top);
    const LogParameter& log_param = param_.log_param();
    const float base = log_param.base();
    const float log_base = natural_log_of_base(base, where(), "log_param");
    const float base_scale = 1.0f / log_base;
    XTRAIN_CHECK(std::isfinite(log_base) && std::isfinite(base_scale), where(), ": log_param.base ",
                 base, " gives no finite 1 / ln(base); use a positive base other than 1");
    forward_ = ops::LogForward{log_param.scale(), log_param.shift(), base_scale};
    backward_ =
        ops::LogBackward{log_param.scale(), log_param.shift(), log_param.scale() / log_base};
  }
};

}  // namespace

void register_log_layer(LayerRegistry& registry) { add_layer<LogLayer>(registry, kLog); }

}  // namespace xtrain

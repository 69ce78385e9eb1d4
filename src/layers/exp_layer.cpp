// Exp (exp_param: base B, scale a, shift b; defaults -1 meaning e, 1, 0):
//   y = B^(a x + b) = c e^(k x),   k = a ln(B),  c = B^b
//   dE/dx = dE/dy * k y
// The gradient reads only y, so the layer works in place.
#include <cmath>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ExpLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Exp"; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const ExpParameter& exp_param = param_.exp_param();
    const float base = exp_param.base();
    const bool natural = base == -1.0f;
    XTRAIN_CHECK(natural || base > 0, where(),
                 ": exp_param.base must be positive, or -1 for e; got ", base);
    const float log_base = natural ? 1.0f : std::log(base);
    XTRAIN_CHECK(std::isfinite(log_base), where(), ": exp_param.base ", base,
                 " has no finite logarithm; use a finite positive base");
    inner_scale_ = log_base * exp_param.scale();
    const float shift = exp_param.shift();
    outer_scale_ = shift == 0.0f ? 1.0f : (natural ? std::exp(shift) : std::pow(base, shift));
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_cpu(bottom[0]->count(), ops::ExpForward{inner_scale_, outer_scale_},
                   top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), ops::ExpBackward{inner_scale_},
                   bottom[0]->mutable_cpu_diff(), top[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::exp_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                      inner_scale_, outer_scale_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::exp_backward(top[0]->gpu_data(), top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(),
                       bottom[0]->count(), inner_scale_);
  }
#endif

 private:
  float inner_scale_ = 1.0f;  // k
  float outer_scale_ = 1.0f;  // c
};

}  // namespace

void register_exp_layer(LayerRegistry& registry) { add_layer<ExpLayer>(registry, "Exp"); }

}  // namespace xtrain

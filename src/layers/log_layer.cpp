// Log (log_param: base B, scale a, shift b; defaults -1 meaning e, 1, 0):
//   y = log_B(a x + b) = ln(a x + b) / ln(B)
//   dE/dx = dE/dy * a / (ln(B) (a x + b))
// The gradient reads x; in place, x is kept for backward.
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

class LogLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Log"; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const LogParameter& log_param = param_.log_param();
    const float base = log_param.base();
    const bool natural = base == -1.0f;
    XTRAIN_CHECK(natural || base > 0, where(),
                 ": log_param.base must be positive, or -1 for e; got ", base);
    const float log_base = natural ? 1.0f : std::log(base);
    const float base_scale = 1.0f / log_base;
    XTRAIN_CHECK(std::isfinite(log_base) && std::isfinite(base_scale), where(), ": log_param.base ",
                 base, " gives no finite 1 / ln(base); use a positive base other than 1");
    forward_ = ops::LogForward{log_param.scale(), log_param.shift(), base_scale};
    backward_ =
        ops::LogBackward{log_param.scale(), log_param.shift(), log_param.scale() / log_base};
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place(bottom, top);
    ops::apply_cpu(bottom[0]->count(), forward_, top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    ops::apply_cpu(bottom[0]->count(), backward_, bottom[0]->mutable_cpu_diff(),
                   kept_input_cpu(bottom, top), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    keep_input_if_in_place_gpu(bottom, top);
    cuda::log_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                      forward_.scale, forward_.shift, forward_.base_scale);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::log_backward(kept_input_gpu(bottom, top), top[0]->gpu_diff(),
                       bottom[0]->mutable_gpu_diff(), bottom[0]->count(), backward_.scale,
                       backward_.shift, backward_.backward_scale);
  }
#endif

 private:
  ops::LogForward forward_{1.0f, 0.0f, 1.0f};
  ops::LogBackward backward_{1.0f, 0.0f, 1.0f};
};

}  // namespace

void register_log_layer(LayerRegistry& registry) { add_layer<LogLayer>(registry, "Log"); }

}  // namespace xtrain

// Power (power_param: power p, scale a, shift b; defaults 1, 1, 0):
//   y = (a x + b)^p
//   dE/dx = dE/dy * p a (a x + b)^(p - 1)
// Computed as Caffe computes it (src/core/elementwise_ops.hpp, PowerForward
// and PowerBackward): when p a = 0 the output is the constant 1 (p = 0) or
// b^p (a = 0) and the gradient 0; otherwise the gradient is read from y where
// it can be (p y / x when b = 0), so x = 0 with b = 0 gives inf or NaN there,
// as in Caffe. The gradient reads x; in place, x is kept for backward.
#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class PowerLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Power"; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const PowerParameter& power = param_.power_param();
    forward_ = ops::PowerForward{power.power(), power.scale(), power.shift()};
    backward_ = ops::PowerBackward{power.power(), power.scale(), power.shift()};
  }

 protected:
  // The constant and linear cases have gradients that do not depend on x.
  bool gradient_reads_input() const {
    return forward_.power * forward_.scale != 0.0f && forward_.power != 1.0f;
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (gradient_reads_input()) keep_input_if_in_place(bottom, top);
    ops::apply_cpu(bottom[0]->count(), forward_, top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    // Without gradient_reads_input() the functor ignores x; any pointer will do.
    const float* input = gradient_reads_input() ? kept_input_cpu(bottom, top) : top[0]->cpu_data();
    ops::apply_cpu(bottom[0]->count(), backward_, bottom[0]->mutable_cpu_diff(), input,
                   top[0]->cpu_data(), top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (gradient_reads_input()) keep_input_if_in_place_gpu(bottom, top);
    cuda::power_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                        forward_.power, forward_.scale, forward_.shift);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* input = gradient_reads_input() ? kept_input_gpu(bottom, top) : top[0]->gpu_data();
    cuda::power_backward(input, top[0]->gpu_data(), top[0]->gpu_diff(),
                         bottom[0]->mutable_gpu_diff(), bottom[0]->count(), backward_.power,
                         backward_.scale, backward_.shift);
  }
#endif

 private:
  ops::PowerForward forward_{1.0f, 1.0f, 0.0f};
  ops::PowerBackward backward_{1.0f, 1.0f, 0.0f};
};

}  // namespace

void register_power_layer(LayerRegistry& registry) { add_layer<PowerLayer>(registry, "Power"); }

}  // namespace xtrain

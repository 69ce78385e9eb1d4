// ElementwiseNeuronLayer: a neuron layer that is one pair of elementwise
// functors of core/elementwise_ops.hpp, the same on both devices:
//   forward    y_i     = Forward(x_i)
//   backward   dE/dx_i = Backward(r_i, dE/dy_i),  r = y or x (BackwardReads)
// The CPU loop is ops::apply_cpu, the GPU kernel cuda::apply (instantiated for
// these functors in src/cuda/neuron_kernels.cu). A layer with parameters
// (Exp, Log) derives from it and sets forward_ and backward_ in layer_setup.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/error.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/device_apply_kernels.hpp"
#endif

namespace xtrain {

// What the backward functor reads besides dE/dy.
enum class BackwardReads {
  kOutput,      // y: the layer runs in place as it is
  kInput,       // x: in place, a copy of x is kept for backward
  kInputApart,  // x: the layer refuses to run in place (as Caffe's does)
};

template <const char* kType, typename Forward, typename Backward, BackwardReads kReads>
class ElementwiseNeuronLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return kType; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    if (kReads == BackwardReads::kInputApart) check_not_in_place(bottom, top);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (kReads == BackwardReads::kInput) keep_input_if_in_place(bottom, top);
    ops::apply_cpu(bottom[0]->count(), forward_, top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* read =
        kReads == BackwardReads::kOutput ? top[0]->cpu_data() : kept_input_cpu(bottom, top);
    ops::apply_cpu(bottom[0]->count(), backward_, bottom[0]->mutable_cpu_diff(), read,
                   top[0]->cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (kReads == BackwardReads::kInput) keep_input_if_in_place_gpu(bottom, top);
    cuda::apply(bottom[0]->count(), forward_, top[0]->mutable_gpu_data(), bottom[0]->gpu_data());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* read =
        kReads == BackwardReads::kOutput ? top[0]->gpu_data() : kept_input_gpu(bottom, top);
    cuda::apply(bottom[0]->count(), backward_, bottom[0]->mutable_gpu_diff(), read,
                top[0]->gpu_diff());
  }
#endif

  Forward forward_{};
  Backward backward_{};
};

// ln(B) for the `base` B of Exp's and Log's parameters (`param`: "exp_param"
// or "log_param"), where -1 means e; an Error naming the layer `where` for a
// base neither positive nor -1.
inline float natural_log_of_base(float base, const std::string& where, const char* param) {
  const bool natural = base == -1.0f;
  XTRAIN_CHECK(natural || base > 0, where, ": ", param, ".base must be positive, or -1 for e; got ",
               base);
  return natural ? 1.0f : std::log(base);
}

}  // namespace xtrain

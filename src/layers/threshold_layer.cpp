// Threshold (threshold_param.threshold t, default 0):
//   y = x > t ? 1 : 0
// A step function has no useful gradient; as in Caffe, asking for one is an
// error (the net only asks when the bottom needs a gradient).
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

class ThresholdLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Threshold"; }

 protected:
  float threshold() const { return param_.threshold_param().threshold(); }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    ops::apply_cpu(bottom[0]->count(), ops::ThresholdForward{threshold()},
                   top[0]->mutable_cpu_data(), bottom[0]->cpu_data());
  }

  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    XTRAIN_CHECK(!propagate_down[0], where(), " has no gradient, but its bottom '",
                 param_.bottom_size() > 0 ? param_.bottom(0) : std::string("?"), "' (",
                 bottom[0]->shape_string(),
                 ") needs one; add propagate_down: false to this layer, or train the layers "
                 "below it without going through a Threshold");
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::threshold_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), bottom[0]->count(),
                            threshold());
  }
#endif
};

}  // namespace

void register_threshold_layer(LayerRegistry& registry) {
  add_layer<ThresholdLayer>(registry, "Threshold");
}

}  // namespace xtrain

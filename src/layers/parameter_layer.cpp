// Parameter (parameter_param { shape { dim: ... } }): no bottoms; one top
// that is the layer's one learnable blob, of that shape.
//   forward:  top = W
//   backward: dE/dW += dE/dtop
// W starts at zero (Caffe fills it with nothing), so it is meant to be
// learned or loaded from a .caffemodel; a stored blob of the net (or of the
// weights file) is kept when its shape fits.
//
// Caffe makes the top share W's data and diff, so the layer reading the top
// overwrites W's gradient instead of adding to it; we copy in forward and
// add in backward, which gives the same gradient for one pass and the right
// one when the solver accumulates several (iter_size > 1).
#include <vector>

#include "core/engine_hooks.hpp"
#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/learnable_blobs.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class ParameterLayer : public Layer, public EngineHooks {
 public:
  using Layer::Layer;
  const char* type() const override { return "Parameter"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    (void)top;
    XTRAIN_CHECK(param_.parameter_param().has_shape(), where(),
                 " needs parameter_param { shape { dim: ... } }: the shape of its blob");
    Blob shaped;
    shaped.reshape(param_.parameter_param().shape());
    static const FillerParameter zeros;  // constant 0
    setup_learnable_blobs(where(), {{"parameter", shaped.shape(), &zeros, "filler"}},
                          "(parameter_param.shape)", &blobs_, random());
    set_param_propagate_down(0, true);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    top[0]->reshape_like(*blobs_[0]);
  }

  bool backward_touches_top_data(int) const override { return false; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    math::copy(blobs_[0]->count(), blobs_[0]->cpu_data(), top[0]->mutable_cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    (void)propagate_down;
    (void)bottom;
    if (!param_propagate_down(0)) return;
    math::axpy(blobs_[0]->count(), 1.0f, top[0]->cpu_diff(), blobs_[0]->mutable_cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    math::gpu::copy(blobs_[0]->count(), blobs_[0]->gpu_data(), top[0]->mutable_gpu_data());
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    (void)propagate_down;
    (void)bottom;
    if (!param_propagate_down(0)) return;
    math::gpu::axpy(blobs_[0]->count(), 1.0f, top[0]->gpu_diff(), blobs_[0]->mutable_gpu_diff());
  }
#endif
};

}  // namespace

void register_parameter_layer(LayerRegistry& registry) {
  add_layer<ParameterLayer>(registry, "Parameter");
}

}  // namespace xtrain

// Silence: consumes any number of bottoms and produces nothing, so outputs a
// net computes but does not use are not reported as net outputs. Its
// gradient is zero: backward writes zeros into the diffs of the bottoms that
// need a gradient.
#include <algorithm>

#include "layers/builtin_layers.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class SilenceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Silence"; }
  int min_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 0; }

  void reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void forward_cpu(const BlobVec&, const BlobVec&) override {}

  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      if (propagate_down[i]) std::fill_n(bottom[i]->mutable_cpu_diff(), bottom[i]->count(), 0.0f);
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec&, const BlobVec&) override {}

  void backward_gpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      if (propagate_down[i])
        math::gpu::set(bottom[i]->count(), 0.0f, bottom[i]->mutable_gpu_diff());
    }
  }
#endif
};

}  // namespace

void register_silence_layer(LayerRegistry& registry) {
  add_layer<SilenceLayer>(registry, "Silence");
}

}  // namespace xtrain

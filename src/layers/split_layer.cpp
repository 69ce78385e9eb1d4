// Split: hands one bottom to several consumers. Every top shares the bottom's
// data (no copy); backward sums the tops' gradients into the bottom's diff:
//   dE/dx = sum_t dE/dy_t
// The Net inserts these wherever a blob feeds more than one layer.
#include <algorithm>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/cuda_check.hpp"
#include "cuda/elementwise_kernels.hpp"
#endif

namespace xtrain {
namespace {

class SplitLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Split"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    for (std::size_t t = 0; t < top.size(); ++t) {
      // In place, the bottom's diff would be overwritten while being summed.
      XTRAIN_CHECK(top[t] != bottom[0], where(), " cannot run in place: top ", t,
                   " is its bottom; give each top its own name");
      top[t]->reshape_like(*bottom[0]);
      top[t]->share_data(*bottom[0]);
    }
  }

 protected:
  void forward_cpu(const BlobVec&, const BlobVec&) override {}
  void forward_gpu(const BlobVec&, const BlobVec&) override {}

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    float* diff = bottom[0]->mutable_cpu_diff();
    if (top.size() == 1) {
      std::copy_n(top[0]->cpu_diff(), count, diff);
      return;
    }
    ops::apply_cpu(count, ops::Add{}, diff, top[0]->cpu_diff(), top[1]->cpu_diff());
    for (std::size_t t = 2; t < top.size(); ++t) {
      ops::apply_cpu(count, ops::Add{}, diff, static_cast<const float*>(diff), top[t]->cpu_diff());
    }
  }

#ifdef XTRAIN_USE_CUDA
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    float* diff = bottom[0]->mutable_gpu_diff();
    if (top.size() == 1) {
      XTRAIN_CUDA_CHECK(
          cudaMemcpy(diff, top[0]->gpu_diff(), count * sizeof(float), cudaMemcpyDeviceToDevice));
      return;
    }
    cuda::add(top[0]->gpu_diff(), top[1]->gpu_diff(), diff, count);
    for (std::size_t t = 2; t < top.size(); ++t) cuda::add(diff, top[t]->gpu_diff(), diff, count);
  }
#endif
};

}  // namespace

void register_split_layer(LayerRegistry& registry) { add_layer<SplitLayer>(registry, "Split"); }

}  // namespace xtrain

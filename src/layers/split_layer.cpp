// Split: hands one bottom to several consumers. Every top shares the bottom's
// data (no copy); backward sums the tops' gradients into the bottom's diff:
//   dE/dx = sum_t dE/dy_t
// The Net inserts these wherever a blob feeds more than one layer.
#include <algorithm>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/engine_hooks.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/parallel_blocks.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class SplitLayer : public Layer, public EngineHooks {
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

  // The tops are views of the bottom's data, in whatever layout it has;
  // backward sums the tops' gradients elementwise in that layout.
  bool reads_channel_blocked_bottom(int) const override { return true; }
  bool tops_share_bottom_data() const override { return true; }
  bool can_write_channel_blocked_top(int, const std::vector<bool>& blocked_bottoms) const override {
    return blocked_bottoms[0];
  }
  // The sum accumulates into the first top's gradient (its storage,
  // when the memory plan shares it; math::gpu::copy skips a copy onto itself).
  int top_whose_gradient_storage_bottom_may_use(int) const override { return 0; }

 protected:
  void forward_cpu(const BlobVec&, const BlobVec&) override {}
  void forward_gpu(const BlobVec&, const BlobVec&) override {}

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    const MemoryLayout layout = bottom[0]->data_layout();
    // The tops' gradients first: the bottom's may be the first top's storage
    // (gradients in place, below), which `overwrite` must not find unconverted.
    std::vector<const float*> top_diffs;
    for (const Blob* output : top) top_diffs.push_back(output->cpu_diff_in(layout));
    float* diff = bottom[0]->overwrite_cpu_diff_in(layout);
    if (top_diffs.size() == 1 && top_diffs[0] == diff) return;
    // One sweep: each block of the sum stays in cache while the tops are
    // added to it one after another (the order of Caffe's sweeps).
    // In place, `diff` is `top_diffs[0]`: each element of it is read before
    // it is written, so the sweeps below hold.
    for_each_block(count, top.size(), [&](std::size_t begin, std::size_t end) {
      if (top_diffs.size() == 1) {
        std::copy(top_diffs[0] + begin, top_diffs[0] + end, diff + begin);
        return;
      }
      const float* first = top_diffs[0];
      const float* second = top_diffs[1];
      const ops::Add add;  // the functor cuda::add applies
      for (std::size_t j = begin; j < end; ++j) diff[j] = add(first[j], second[j]);
      for (std::size_t t = 2; t < top_diffs.size(); ++t) {
        const float* more = top_diffs[t];
        for (std::size_t j = begin; j < end; ++j) diff[j] = add(diff[j], more[j]);
      }
    });
  }

#ifdef XTRAIN_USE_CUDA
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    float* diff = bottom[0]->mutable_gpu_diff();
    if (top.size() == 1) {
      math::gpu::copy(count, top[0]->gpu_diff(), diff);  // on this thread's stream
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

// Dropout (dropout_param.dropout_ratio = r, default 0.5).
//   TRAIN: m ~ Bernoulli(1 - r) per element, y = x * m / (1 - r),
//          dE/dx = dE/dy * m / (1 - r)
//   TEST:  y = x, dE/dx = dE/dy
// Scaling at train time (inverted dropout) keeps the expected activation the
// same in both phases, so the test net needs no rescaling. The mask comes from
// the layer's own random stream and is kept for the backward pass.
#include <algorithm>
#include <memory>

#include "core/elementwise_ops.hpp"
#include "core/parallel_loop.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/dropout_mask.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/synced_memory.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class DropoutLayer : public NeuronLayer {
 public:
  using NeuronLayer::NeuronLayer;
  const char* type() const override { return "Dropout"; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    ratio_ = param_.dropout_param().dropout_ratio();
    XTRAIN_CHECK(ratio_ >= 0 && ratio_ < 1, where(), ": dropout_ratio must be in [0, 1), got ",
                 ratio_);
    // In double, then rounded once, as Caffe does.
    scale_ = static_cast<float>(1.0 / (1.0 - static_cast<double>(ratio_)));
    keep_threshold_ = dropout_keep_threshold(1.0 - static_cast<double>(ratio_));
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    NeuronLayer::reshape(bottom, top);
    if (!training()) return;  // a test net needs no mask
    const std::size_t bytes = bottom[0]->count() * sizeof(unsigned);
    if (!mask_ || mask_->size() < bytes) mask_ = std::make_unique<SyncedMemory>(bytes);
  }

 protected:
  bool training() const { return phase() == TRAIN; }

  // Draws a fresh mask on the host (so CPU and GPU runs with one seed agree),
  // item by item, axis 0 being the batch: local item j is global item
  // index * B + j of the data shard (index, count).
  const unsigned* draw_mask(const Blob& bottom) {
    const std::uint64_t high = random().engine()();
    const std::uint64_t low = random().engine()();
    const std::uint64_t forward_seed = (high << 32) | low;
    auto* mask = static_cast<unsigned*>(mask_->mutable_cpu_data());
    const std::size_t count = bottom.count();
    if (count == 0) return mask;
    const std::int64_t items = bottom.num_axes() > 0 ? bottom.shape(0) : 1;
    const std::size_t per_item = count / static_cast<std::size_t>(items);
    const std::uint64_t first_item =
        static_cast<std::uint64_t>(data_shard().index) * static_cast<std::uint64_t>(items);
    const std::uint64_t threshold = keep_threshold_;
    parallel_for(items, per_item * 8, [=](std::int64_t item) {
      const DropoutKeep keep{
          derive_seed(forward_seed, "item", first_item + static_cast<std::uint64_t>(item)),
          threshold};
      unsigned* item_mask = mask + static_cast<std::size_t>(item) * per_item;
      for (std::size_t e = 0; e < per_item; ++e) item_mask[e] = keep(e);
    });
    return mask;
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    if (training()) {
      const unsigned* mask = draw_mask(*bottom[0]);
      ops::apply_cpu(count, ops::DropoutForward{scale_}, top[0]->mutable_cpu_data(),
                     bottom[0]->cpu_data(), mask);
    } else if (top[0] != bottom[0]) {
      std::copy_n(bottom[0]->cpu_data(), count, top[0]->mutable_cpu_data());
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    if (training()) {
      ops::apply_cpu(count, ops::DropoutBackward{scale_}, bottom[0]->mutable_cpu_diff(),
                     top[0]->cpu_diff(), static_cast<const unsigned*>(mask_->cpu_data()));
    } else if (top[0] != bottom[0]) {
      std::copy_n(top[0]->cpu_diff(), count, bottom[0]->mutable_cpu_diff());
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    if (training()) {
      draw_mask(*bottom[0]);
      cuda::dropout_forward(bottom[0]->gpu_data(), static_cast<const unsigned*>(mask_->gpu_data()),
                            top[0]->mutable_gpu_data(), count, scale_);
    } else if (top[0] != bottom[0]) {
      math::gpu::copy(count, bottom[0]->gpu_data(), top[0]->mutable_gpu_data());
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const std::size_t count = bottom[0]->count();
    if (training()) {
      cuda::dropout_backward(top[0]->gpu_diff(), static_cast<const unsigned*>(mask_->gpu_data()),
                             bottom[0]->mutable_gpu_diff(), count, scale_);
    } else if (top[0] != bottom[0]) {
      math::gpu::copy(count, top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff());
    }
  }
#endif

 private:
  float ratio_ = 0.5f;
  float scale_ = 2.0f;
  std::uint64_t keep_threshold_ = 0;
  std::unique_ptr<SyncedMemory> mask_;  // count unsigned 0/1 values
};

}  // namespace

void register_dropout_layer(LayerRegistry& registry) {
  add_layer<DropoutLayer>(registry, "Dropout");
}

}  // namespace xtrain

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
#include "core/engine_hooks.hpp"
#include "core/parallel_loop.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/dropout_mask.hpp"
#include "layers/neuron_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/synced_memory.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#include "layers/random_kernels.hpp"
#endif

namespace xtrain {
namespace {

class DropoutLayer : public NeuronLayer, public EngineHooks {
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

  // A fresh mask per forward (src/layers/dropout_mask.hpp): the key from the
  // layer's stream, the items by their place in the global batch, axis 0
  // being the batch: local item j is global item index * B + j of the data
  // shard (index, count).
  struct MaskDraw {
    DropoutMask mask;
    std::uint64_t first_item = 0;
    std::size_t items = 0;
    std::size_t per_item = 0;
  };

  MaskDraw next_mask_draw(const Blob& bottom) {
    const std::uint64_t high = random().engine()();
    const std::uint64_t low = random().engine()();
    MaskDraw draw;
    draw.mask = DropoutMask{philox_key((high << 32) | low), keep_threshold_};
    const std::size_t count = bottom.count();
    if (count == 0) return draw;
    draw.items = bottom.num_axes() > 0 ? static_cast<std::size_t>(bottom.shape(0)) : 1;
    draw.per_item = count / draw.items;
    draw.first_item = static_cast<std::uint64_t>(data_shard().index) * draw.items;
    return draw;
  }

  const unsigned* draw_mask_cpu(const Blob& bottom) {
    const MaskDraw draw = next_mask_draw(bottom);
    auto* mask = static_cast<unsigned*>(mask_->mutable_cpu_data());
    const std::uint64_t blocks = (draw.per_item + 3) / 4;
    const std::uint64_t whole_blocks = draw.per_item / 4;
    // ~50 integer operations per block of four.
    parallel_for(static_cast<std::int64_t>(draw.items), blocks * 50, [=](std::int64_t j) {
      // A copy the mask's stores cannot alias, so the key stays in registers.
      const DropoutMask drawer = draw.mask;
      unsigned* item_mask = mask + static_cast<std::size_t>(j) * draw.per_item;
      const std::uint64_t item = draw.first_item + static_cast<std::uint64_t>(j);
      std::uint64_t block = 0;
      // Two blocks a step: their Philox chains overlap (1.3x on Zen 4).
      for (; block + 2 <= whole_blocks; block += 2) {
        const Philox4x32Block first = drawer.draws(item, block);
        const Philox4x32Block second = drawer.draws(item, block + 1);
        unsigned* out = item_mask + block * 4;
        for (int k = 0; k < 4; ++k) {
          out[k] = drawer.keep(first.word[k]);
          out[4 + k] = drawer.keep(second.word[k]);
        }
      }
      for (; block < blocks; ++block) drawer.draw_block(item, block, item_mask, draw.per_item);
    });
    return mask;
  }

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const std::size_t count = bottom[0]->count();
    if (training()) {
      const unsigned* mask = draw_mask_cpu(*bottom[0]);
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
      // Drawn on the device: nothing waits for the host or crosses the bus.
      const MaskDraw draw = next_mask_draw(*bottom[0]);
      auto* mask = static_cast<unsigned*>(mask_->mutable_gpu_data());
      cuda::dropout_draw_mask(draw.mask, draw.first_item, draw.items, draw.per_item, mask);
      cuda::dropout_forward(bottom[0]->gpu_data(), mask, top[0]->mutable_gpu_data(), count, scale_);
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

  std::size_t buffer_bytes() const override { return mask_ ? mask_->size() : 0; }

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

// Concat (Caffe type "Concat"): joins the bottoms along one axis
// (concat_param.axis, default 1 = channels; or the legacy concat_dim, which
// may not be negative). The bottoms must agree on every other axis. Viewing
// each bottom as (outer, its size on the axis, inner), top row block o is the
// bottoms' blocks o one after another. Backward cuts dtop back into the
// bottoms' diffs. A single bottom is passed through as a view (no copy).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/engine_hooks.hpp"
#include "core/parallel_loop.hpp"
#include "layers/axis_parts.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/parallel_blocks.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class ConcatLayer : public Layer, public EngineHooks {
 public:
  using Layer::Layer;
  const char* type() const override { return "Concat"; }
  int min_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const ConcatParameter& concat = param_.concat_param();
    XTRAIN_CHECK(!(concat.has_axis() && concat.has_concat_dim()), where(),
                 ": give concat_param.axis or the legacy concat_dim, not both");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& first = *bottom[0];
    const ConcatParameter& concat = param_.concat_param();
    if (concat.has_concat_dim()) {
      XTRAIN_CHECK(static_cast<int>(concat.concat_dim()) < first.num_axes(), where(),
                   ": concat_dim ", concat.concat_dim(), " is out of range for bottom 0 of shape ",
                   first.shape_string());
      axis_ = static_cast<int>(concat.concat_dim());
    } else {
      XTRAIN_CHECK(concat.axis() >= -first.num_axes() && concat.axis() < first.num_axes(), where(),
                   ": concat_param.axis ", concat.axis(), " is out of range for bottom 0 of shape ",
                   first.shape_string());
      axis_ = first.canonical_axis_index(concat.axis());
    }
    std::vector<int> top_shape = first.shape();
    for (std::size_t i = 1; i < bottom.size(); ++i) {
      const Blob& input = *bottom[i];
      bool agrees = input.num_axes() == first.num_axes();
      for (int a = 0; agrees && a < first.num_axes(); ++a) {
        agrees = a == axis_ || input.shape(a) == first.shape(a);
      }
      XTRAIN_CHECK(agrees, where(), ": the bottoms must have the same shape except on axis ", axis_,
                   ", but bottom 0 is ", first.shape_string(), " and bottom ", i, " is ",
                   input.shape_string());
      top_shape[axis_] += input.shape(axis_);
    }
    XTRAIN_CHECK(bottom.size() == 1 || top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottoms");
    top[0]->reshape(top_shape);
    outer_ = first.count(0, axis_);
    inner_ = first.count(axis_ + 1);
    if (bottom.size() == 1) {
      top[0]->share_data(first);
      top[0]->share_diff(first);
    }
    // Along channels, in whole blocks (of channel_block()), an image's
    // channels [c0, c1) are the same run of values in the blocked layout as
    // in the plain one: the copies below work unchanged.
    whole_channel_blocks_ = axis_ == 1 && bottom.size() > 1;
    for (const Blob* input : bottom) {
      whole_channel_blocks_ = whole_channel_blocks_ && input->can_be_channel_blocked();
    }
  }

  bool reads_channel_blocked_bottom(int) const override { return whole_channel_blocks_; }
  bool computes_in_one_layout() const override { return true; }
  bool can_write_channel_blocked_top(int, const std::vector<bool>& blocked_bottoms) const override {
    return whole_channel_blocks_ &&
           std::all_of(blocked_bottoms.begin(), blocked_bottoms.end(), [](bool b) { return b; });
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (bottom.size() == 1) return;
    layout_ = whole_channel_blocks_ && writes_channel_blocked_top(0) ? MemoryLayout::kChannelBlocked
                                                                     : MemoryLayout::kPlain;
    float* output = top[0]->overwrite_cpu_data_in(layout_);
    std::vector<const float*> inputs;
    for (const Blob* input : bottom) inputs.push_back(input->cpu_data_in(layout_));
    for_each_piece(bottom,
                   [&](std::size_t i, std::size_t source, std::size_t target, std::size_t length) {
                     std::copy_n(inputs[i] + source, length, output + target);
                   });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (bottom.size() == 1) return;
    const float* output_diff = top[0]->cpu_diff_in(layout_);
    std::vector<float*> diffs;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      diffs.push_back(propagate_down[i] ? bottom[i]->overwrite_cpu_diff_in(layout_) : nullptr);
    }
    for_each_piece(bottom,
                   [&](std::size_t i, std::size_t source, std::size_t target, std::size_t length) {
                     if (diffs[i]) std::copy_n(output_diff + target, length, diffs[i] + source);
                   });
  }

#ifdef XTRAIN_USE_CUDA
  // One strided copy per bottom (see axis_parts.hpp).
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (bottom.size() == 1 || outer_ == 0) return;
    float* output = top[0]->mutable_gpu_data();
    for_each_axis_part(
        *top[0], bottom, axis_, inner_,
        [&](std::size_t i, std::size_t block, std::size_t top_block, std::size_t offset) {
          math::gpu::copy_rows(outer_, block, bottom[i]->gpu_data(), block, output + offset,
                               top_block);
        });
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (bottom.size() == 1 || outer_ == 0) return;
    const float* output_diff = top[0]->gpu_diff();
    for_each_axis_part(
        *top[0], bottom, axis_, inner_,
        [&](std::size_t i, std::size_t block, std::size_t top_block, std::size_t offset) {
          if (!propagate_down[i]) return;
          math::gpu::copy_rows(outer_, block, output_diff + offset, top_block,
                               bottom[i]->mutable_gpu_diff(), block);
        });
  }
#endif

 private:
  // copy(i, source, target, length) for every run of values that bottom i
  // holds at `source` and the top at `target`, spread over the thread pool:
  // by top row (outer index) when there are several, else by bottom.
  template <typename Copy>
  void for_each_piece(const BlobVec& bottom, Copy copy) const {
    if (outer_ == 0) return;  // an empty batch: no rows (and no arrays to copy)
    std::vector<std::size_t> blocks;   // bottom i's values per row
    std::vector<std::size_t> offsets;  // where they start in a top row
    std::size_t top_block = 0;
    for (const Blob* input : bottom) {
      blocks.push_back(input->shape(axis_) * inner_);
      offsets.push_back(top_block);
      top_block += blocks.back();
    }
    if (outer_ > 1) {
      parallel_for(static_cast<std::int64_t>(outer_), top_block, [&](std::int64_t row) {
        const std::size_t o = static_cast<std::size_t>(row);
        for (std::size_t i = 0; i < bottom.size(); ++i) {
          copy(i, o * blocks[i], o * top_block + offsets[i], blocks[i]);
        }
      });
      return;
    }
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      for_each_block(blocks[i], 1, [&](std::size_t begin, std::size_t end) {
        copy(i, begin, offsets[i] + begin, end - begin);
      });
    }
  }

  int axis_ = 1;
  bool whole_channel_blocks_ = false;
  MemoryLayout layout_ = MemoryLayout::kPlain;  // of the last forward pass
  std::size_t outer_ = 1;
  std::size_t inner_ = 1;
};

}  // namespace

void register_concat_layer(LayerRegistry& registry) { add_layer<ConcatLayer>(registry, "Concat"); }

}  // namespace xtrain

// Scale (Caffe type "Scale"): multiplies bottom[0] by a scale broadcast along
// the axes it lines up with (see broadcast_axes.hpp), optionally adding a bias
// of the same shape:
//   top[o, d, i] = bottom[o, d, i] * scale[d] (+ bias[d])
// The scale is bottom[1] when given (then there is no learned scale), else a
// learned blob spanning scale_param.num_axes axes from scale_param.axis,
// filled by scale_param.filler (constant 1 by default). With bias_term the
// bias is learned (bias_filler, constant 0 by default) and is the last blob.
// Backward, with x = bottom[0]:
//   dbottom = dtop * scale[d]
//   dscale[d] = sum over o, i of dtop[o, d, i] * x[o, d, i]
//   dbias[d]  = sum over o, i of dtop[o, d, i]
// Learned blobs accumulate their gradients; bottom[1]'s diff is overwritten.
// Works in place (forward then keeps a copy of x for dscale, unless the layer
// before keeps one: EngineHooks::use_kept_bottom_copy). In place it can
// take over the in-place ReLU that follows it (EngineHooks::absorb_following_relu):
// forward then writes ReLU(top) and backward first masks dtop by top > 0, with
// the ReLU's own functors, so the bits are the same. This is Caffe's
// ScaleLayer with its inner BiasLayer folded in.
//
// With a learned per-channel scale (one value per channel of a 4-axis
// bottom) the layer also computes in the channel-blocked layout
// (core/channel_blocked_layout.hpp): in place in the blob's layout, out of
// place in the one the Net chose for the top. Each lane of a (sample, channel
// block) block is one row, summed with the plain row sums' additions in their
// order (channel_statistics_blocked.hpp), so both layouts give the same bits.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/parallel_loop.hpp"
#include "layers/broadcast_axes.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/per_channel_layer.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/channel_statistics_blocked.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/per_channel_blocked.hpp"
#include "layers/scale_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/broadcast_kernels.hpp"
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class ScaleLayer : public PerChannelLayer {
 public:
  using PerChannelLayer::PerChannelLayer;
  const char* type() const override { return "Scale"; }
  int min_bottom_blobs() const override { return 1; }
  int max_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const ScaleParameter& scale = param_.scale_param();
    const Blob& input = *bottom[0];
    learned_scale_ = bottom.size() == 1;
    bias_term_ = scale.bias_term();
    std::vector<LearnableBlobSpec> specs;
    std::vector<int> shape;
    if (learned_scale_) {
      shape = learned_operand_shape(where(), "scale_param", input, scale.axis(), scale.num_axes());
      if (scale.has_filler()) {
        scale_filler_ = scale.filler();
      } else {
        scale_filler_.set_type("constant");  // identity by default
        scale_filler_.set_value(1.0f);
      }
      specs.push_back({"scale", shape, &scale_filler_, "scale_param.filler"});
    } else if (bias_term_) {
      // The bias spans the axes bottom[1] covers, as in Caffe.
      shape =
          learned_operand_shape(where(), "scale_param", input, scale.axis(), bottom[1]->num_axes());
    }
    if (bias_term_) {
      specs.push_back({"bias", shape, &scale.bias_filler(), "scale_param.bias_filler"});
    }
    if (specs.empty()) {
      XTRAIN_CHECK(blobs_.empty(), where(), " takes its scale from bottom[1] and has no ",
                   "bias_term, but has ", blobs_.size(), " stored blobs; remove them");
      return;
    }
    setup_learnable_blobs(where(), specs,
                          "(bottom[0]'s dimensions from scale_param.axis over num_axes axes); "
                          "check bias_term and the number of bottoms",
                          &blobs_, random());
    for (std::size_t i = 0; i < blobs_.size(); ++i) {
      set_param_propagate_down(static_cast<int>(i), true);
    }
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& scale = learned_scale_ ? *blobs_[0] : *bottom[1];
    axes_ = broadcast_axes(where(), "scale_param", *bottom[0], scale,
                           learned_scale_ ? "the learned scale" : "bottom[1] (the scale)",
                           param_.scale_param().axis());
    if (bias_term_) {
      XTRAIN_CHECK(blobs_.back()->count() == scale.count(), where(), ": the bias ",
                   blobs_.back()->shape_string(), " does not match the scale ",
                   scale.shape_string());
    }
    in_place_ = top[0] == bottom[0];
    const Blob& input = *bottom[0];
    blocked_supported_ = learned_scale_ && input.num_axes() == 4 &&
                         axes_.outer == static_cast<std::size_t>(input.shape(0)) &&
                         axes_.dim == static_cast<std::size_t>(input.shape(1));
    // In place, the copy of the input is sized by forward: the Net usually
    // hands the layer BatchNorm's copy after setup (use_kept_bottom_copy), and
    // a copy of its own made here would have been written (as zeros) for
    // nothing, raising the process's peak memory during setup.
    if (!in_place_) top[0]->reshape_like(*bottom[0]);
  }


  std::size_t buffer_bytes() const override {
    return saved_is_borrowed_ ? 0 : saved_->bytes_held();
  }
  // Backward reads x from its saved copy in place (the bottom out of place)
  // and the top only to mask by an absorbed ReLU.
  bool backward_touches_bottom_data(int bottom_index) const override {
    return bottom_index == 1 || !in_place_;
  }
  bool backward_touches_top_data(int) const override { return fused_relu_; }
  // In place, the copy of the input that the layer before keeps (BatchNorm's
  // output) serves as the saved input.
  bool use_kept_bottom_copy(std::shared_ptr<KeptActivation> copy) override {
    if (!in_place_ || !copy) return false;
    saved_ = std::move(copy);
    saved_is_borrowed_ = true;
    return true;
  }

  // In place with BatchNorm's copy, the top is scale * copy + bias (and the
  // ReLU): forward again, reading the copy instead of the overwritten blob.
  bool can_recompute_top() const override {
    return in_place_ && saved_is_borrowed_ && learned_scale_;
  }
  void recompute_top(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_ASSERT(can_recompute_top(), "recompute_top on a Scale that cannot");
    recomputing_ = true;
    forward_cpu(bottom, top);
    recomputing_ = false;
  }

  bool absorb_following_relu() override {
    if (!in_place_) return false;
    fused_relu_ = true;
    return true;
  }

  // To the BatchNorm before it, whose copy it reads: a learned scale of one
  // value per channel (plane by plane, as BatchNorm sweeps).
  bool absorbable_scale(AbsorbableScale* scale) override {
    if (!in_place_ || !saved_is_borrowed_ || !learned_scale_ || axes_.dim == 0 ||
        axes_.outer * axes_.dim * axes_.inner != saved_->size()) {
      return false;
    }
    scale->layer = this;
    scale->scale = blobs_[0].get();
    scale->bias = bias_term_ ? blobs_.back().get() : nullptr;
    scale->bias_index = static_cast<int>(blobs_.size()) - 1;
    scale->relu = fused_relu_;
    scale->outer = axes_.outer;
    scale->dim = axes_.dim;
    scale->inner = axes_.inner;
    return true;
  }

 protected:
  // Rows are the (o, d) runs of `inner` values that share scale[d]; both
  // passes spread them over the thread pool in memory order. Backward keeps
  // each row's sums and adds them up by d over o in order, so the gradients
  // do not depend on the thread count.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (in_place_ && !saved_is_borrowed_) saved_->resize(bottom[0]->count());
    // Recomputing, the blob's storage has served others since forward: its
    // layout is theirs, and the copy's is the one forward computed in.
    forward_layout_ = recomputing_ ? saved_->layout
                                   : per_channel_forward_layout(blocked_supported_, in_place_,
                                                                *bottom[0], *top[0],
                                                                writes_channel_blocked_top(0));
    if (saved_is_borrowed_) {
      // The lender wrote the copy in this blob's layout: a bug if not.
      XTRAIN_ASSERT(saved_->layout == forward_layout_ && saved_->size() == bottom[0]->count());
    } else {
      saved_->layout = forward_layout_;
    }
    if (forward_layout_ == MemoryLayout::kChannelBlocked) {
      forward_blocked(*bottom[0], *top[0]);
      return;
    }
    // Recomputing, the input is the saved copy (read row by row).
    const float* input = recomputing_ ? nullptr : bottom[0]->cpu_data();
    float* output = recomputing_ ? top[0]->overwrite_cpu_data_in(MemoryLayout::kPlain)
                                 : top[0]->mutable_cpu_data();
    // In place, the input is copied for backward in the same sweep.
    const bool save = in_place_ && !saved_is_borrowed_;
    const float* scale = scale_blob(bottom)->cpu_data();
    const float* bias = bias_term_ ? blobs_.back()->cpu_data() : nullptr;
    const std::size_t inner = axes_.inner;
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner * 2,
                 [&](std::int64_t row) {
                   const std::size_t d = static_cast<std::size_t>(row) % axes_.dim;
                   const std::size_t offset = static_cast<std::size_t>(row) * inner;
                   const float factor = scale[d];
                   const float shift = bias ? bias[d] : 0.0f;
                   const ops::ScaleShift scale_shift;
                   const float* x = recomputing_ ? saved_->read(offset, inner) : input + offset;
                   float* y = output + offset;
                   if (save) {
                     float* kept = saved_->write(offset, inner);
                     for (std::size_t i = 0; i < inner; ++i) {
                       const float value = x[i];
                       kept[i] = value;
                       y[i] = scale_shift(value, factor, shift);
                     }
                     saved_->finish_write(offset, inner, kept);
                   } else {
                     for (std::size_t i = 0; i < inner; ++i)
                       y[i] = scale_shift(x[i], factor, shift);
                   }
                   // The absorbed ReLU, while the row is in cache.
                   if (fused_relu_) {
                     const ops::ReluForward relu{0.0f};
        // simd: without it GCC keeps the select as a branch,
        // which the signs of real data mispredict half the time.
#pragma omp simd
                     for (std::size_t i = 0; i < inner; ++i) y[i] = relu(y[i]);
                   }
                 });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const MemoryLayout layout =
        per_channel_backward_layout(blocked_supported_, in_place_, *top[0], forward_layout_);
    if (in_place_ && blocked_supported_) {
      saved_->convert_layout(channel_blocked_shape(*bottom[0]), layout);
    }
    if (layout == MemoryLayout::kChannelBlocked) {
      backward_blocked(*top[0], propagate_down[0], *bottom[0]);
      return;
    }
    // With an absorbed ReLU, dtop is first masked in place, row by row (the
    // ReLU's top and bottom are this layer's top).
    float* masked_diff = fused_relu_ ? top[0]->mutable_cpu_diff() : nullptr;
    const float* relu_output = fused_relu_ ? top[0]->cpu_data() : nullptr;
    const auto mask_row = [&](std::size_t offset, std::size_t n) {
      if (!masked_diff) return;
      const ops::ReluBackward relu{0.0f};
#pragma omp simd
      for (std::size_t i = 0; i < n; ++i) {
        masked_diff[offset + i] = relu(relu_output[offset + i], masked_diff[offset + i]);
      }
    };
    const float* output_diff = top[0]->cpu_diff();
    const int bias_index = static_cast<int>(blobs_.size()) - 1;
    float* bias_diff = bias_term_ && param_propagate_down(bias_index)
                           ? blobs_.back()->mutable_cpu_diff()
                           : nullptr;
    const bool scale_gradient =
        learned_scale_ ? param_propagate_down(0) : static_cast<bool>(propagate_down[1]);
    float* scale_diff = scale_gradient ? scale_blob(bottom)->mutable_cpu_diff() : nullptr;
    if (scale_diff && !learned_scale_) std::fill(scale_diff, scale_diff + axes_.dim, 0.0f);
    const float* scale = scale_blob(bottom)->cpu_data();
    float* input_diff = propagate_down[0] ? bottom[0]->mutable_cpu_diff() : nullptr;
    // In place, x is the saved copy (read row by row where needed).
    const float* input = in_place_ ? nullptr : bottom[0]->cpu_data();
    const std::size_t inner = axes_.inner;
    if (!bias_diff && !scale_diff) {
      if (!input_diff) return;
      parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner,
                   [&](std::int64_t row) {
                     const float factor = scale[static_cast<std::size_t>(row) % axes_.dim];
                     const std::size_t offset = static_cast<std::size_t>(row) * inner;
                     mask_row(offset, inner);
                     scale_row(output_diff + offset, factor, inner, input_diff + offset);
                   });
      return;
    }
    // One sweep in memory order: each row's sums, then (in place, after
    // them) its dbottom; the rows' sums are added up by d over o in order.
    row_sums_.resize(axes_.outer * axes_.dim);
    row_dots_.resize(axes_.outer * axes_.dim);
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner * 4,
                 [&](std::int64_t row_index) {
                   const std::size_t row = static_cast<std::size_t>(row_index);
                   const std::size_t offset = row * inner;
                   mask_row(offset, inner);
                   const float* dy = output_diff + offset;
                   if (scale_diff) {
                     const float* x = in_place_ ? saved_->read(offset, inner) : input + offset;
                     const auto sums = channel_statistics::sum_and_dot(dy, x, inner);
                     row_sums_[row] = sums.sum;
                     row_dots_[row] = sums.dot;
                   } else {
                     row_sums_[row] = channel_statistics::sum(dy, inner);
                   }
                   if (input_diff) {
                     scale_row(dy, scale[row % axes_.dim], inner, input_diff + offset);
                   }
                 });
    accumulate_row_sums(bias_diff, scale_diff);
  }

 private:
  // The learned blobs' gradients from the rows' sums, by d over o in order.
  void accumulate_row_sums(float* bias_diff, float* scale_diff) const {
    for (std::size_t o = 0; o < axes_.outer; ++o) {
      for (std::size_t d = 0; d < axes_.dim; ++d) {
        const std::size_t row = o * axes_.dim + d;
        if (bias_diff) bias_diff[d] += static_cast<float>(row_sums_[row]);
        if (scale_diff) scale_diff[d] += static_cast<float>(row_dots_[row]);
      }
    }
  }

  // The forward pass on channel-blocked values (a learned per-channel scale;
  // in place, top is bottom).
  void forward_blocked(Blob& bottom, Blob& top) {
    // Recomputing, the input is the saved copy (read block by block).
    const float* input =
        recomputing_ ? nullptr : bottom.cpu_data_in(MemoryLayout::kChannelBlocked);
    float* output = in_place_ && !recomputing_
                        ? top.mutable_cpu_data_in(MemoryLayout::kChannelBlocked)
                              : top.overwrite_cpu_data_in(MemoryLayout::kChannelBlocked);
    const bool save = in_place_ && !saved_is_borrowed_;
    const float* scale = blobs_[0]->cpu_data();
    const float* bias = bias_term_ ? blobs_.back()->cpu_data() : nullptr;
    const ChannelBlockedShape shape = channel_blocked_shape(bottom);
    for_each_channel_block(shape, 2, [&](auto lanes, int, int first_channel, std::size_t offset) {
      constexpr int B = decltype(lanes)::value;
      float factor[B];
      float shift[B];
      for (int l = 0; l < B; ++l) {
        factor[l] = scale[first_channel + l];
        shift[l] = bias ? bias[first_channel + l] : 0.0f;
      }
      const std::size_t values = static_cast<std::size_t>(shape.spatial) * B;
      const std::size_t end = offset + values;
      // This block's input and saved copy, from `offset` on.
      const float* x = recomputing_ ? saved_->read(offset, values) : input + offset;
      float* saved = save ? saved_->write(offset, values) : nullptr;
      // The absorbed ReLU in the same sweep (relu(x * f + b), the bits of
      // the plain path's two).
      const ops::ReluForward relu{0.0f};
      const bool fused_relu = fused_relu_;
      for (std::size_t at = offset; at < end; at += B) {
        float y[B];
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          const float value = x[at - offset + l];
          if (saved) saved[at - offset + l] = value;
          y[l] = ops::ScaleShift{}(value, factor[l], shift[l]);
          output[at + l] = fused_relu ? relu(y[l]) : y[l];
        }
      }
      if (saved) saved_->finish_write(offset, values, saved);
    });
  }

  // The backward pass on channel-blocked gradients (and the saved input,
  // already in that layout).
  void backward_blocked(Blob& top, bool input_gradient, Blob& bottom) {
    float* masked_diff =
        fused_relu_ ? top.mutable_cpu_diff_in(MemoryLayout::kChannelBlocked) : nullptr;
    const float* relu_output =
        fused_relu_ ? top.cpu_data_in(MemoryLayout::kChannelBlocked) : nullptr;
    const float* output_diff = top.cpu_diff_in(MemoryLayout::kChannelBlocked);
    const int bias_index = static_cast<int>(blobs_.size()) - 1;
    float* bias_diff = bias_term_ && param_propagate_down(bias_index)
                           ? blobs_.back()->mutable_cpu_diff()
                           : nullptr;
    float* scale_diff = param_propagate_down(0) ? blobs_[0]->mutable_cpu_diff() : nullptr;
    const float* scale = blobs_[0]->cpu_data();
    float* input_diff = nullptr;
    if (input_gradient) {
      input_diff = in_place_ ? bottom.mutable_cpu_diff_in(MemoryLayout::kChannelBlocked)
                             : bottom.overwrite_cpu_diff_in(MemoryLayout::kChannelBlocked);
    }
    // In place, x is the saved copy (read block by block).
    const float* input = in_place_ ? nullptr : bottom.cpu_data_in(MemoryLayout::kChannelBlocked);
    if (!input_diff && !bias_diff && !scale_diff) return;
    const ChannelBlockedShape shape = channel_blocked_shape(bottom);
    const auto spatial = static_cast<std::size_t>(shape.spatial);
    row_sums_.resize(axes_.outer * axes_.dim);
    row_dots_.resize(axes_.outer * axes_.dim);
    // Per block, as per row in the plain path: mask dtop, its sums, then (in
    // place, after them) dbottom; a piece of the block at a time, while it
    // is in cache. Without a scale gradient the dots are computed and
    // dropped (only a frozen scale with a learned bias needs that).
    constexpr std::size_t kPiecePositions = 64;  // 4 KiB of each array
    for_each_channel_block(shape, 4, [&](auto lanes, int n, int first_channel, std::size_t offset) {
      constexpr int B = decltype(lanes)::value;
      float factor[B];
      for (int l = 0; l < B; ++l) factor[l] = scale[first_channel + l];
      const float* x = !(scale_diff || bias_diff) ? nullptr
                       : in_place_                ? saved_->read(offset, spatial * B)
                                                  : input + offset;
      channel_statistics::blocked::SumAndDotAccumulator<B> sums;
      for (std::size_t first = 0; first < spatial; first += kPiecePositions) {
        const std::size_t last = std::min(spatial, first + kPiecePositions);
        const std::size_t begin = offset + first * B;
        const std::size_t end = offset + last * B;
        if (masked_diff) {
          const ops::ReluBackward relu{0.0f};
#pragma omp simd
          for (std::size_t i = begin; i < end; ++i) {
            masked_diff[i] = relu(relu_output[i], masked_diff[i]);
          }
        }
        if (x) sums.add(output_diff + offset, x, first, last);
        if (input_diff) {
          for (std::size_t at = begin; at < end; at += B) {
#pragma omp simd
            for (int l = 0; l < B; ++l) {
              input_diff[at + l] = ops::Multiply{}(output_diff[at + l], factor[l]);
            }
          }
        }
      }
      const std::size_t first_row = static_cast<std::size_t>(n) * axes_.dim + first_channel;
      if (scale_diff || bias_diff) {
        sums.totals(row_sums_.data() + first_row, row_dots_.data() + first_row);
      }
    });
    accumulate_row_sums(bias_diff, scale_diff);
  }

  // out = in * factor; out may be in.
  static void scale_row(const float* in, float factor, std::size_t n, float* out) {
    const ops::Multiply multiply;
    for (std::size_t i = 0; i < n; ++i) out[i] = multiply(in[i], factor);
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (in_place_) {  // backward needs x, which the top overwrites
      saved_input_gpu_.reshape_like(*bottom[0]);
      math::gpu::copy(bottom[0]->count(), bottom[0]->gpu_data(),
                      saved_input_gpu_.mutable_gpu_data());
    }
    cuda::scale_forward(bottom[0]->gpu_data(), scale_blob(bottom)->gpu_data(),
                        bias_term_ ? blobs_.back()->gpu_data() : nullptr,
                        top[0]->mutable_gpu_data(), axes_.outer, axes_.dim, axes_.inner,
                        fused_relu_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const std::size_t count = top[0]->count();
    if (fused_relu_) {
      float* masked = top[0]->mutable_gpu_diff();
      cuda::relu_backward(top[0]->gpu_data(), masked, masked, count, 0.0f);
    }
    const float* output_diff = top[0]->gpu_diff();
    const int bias_index = static_cast<int>(blobs_.size()) - 1;
    if (bias_term_ && param_propagate_down(bias_index)) {
      cuda::per_dim_sums(output_diff, nullptr, axes_.outer, axes_.dim, axes_.inner,
                         blobs_.back()->mutable_gpu_diff(), nullptr, true);
    }
    const bool scale_gradient =
        learned_scale_ ? param_propagate_down(0) : static_cast<bool>(propagate_down[1]);
    if (scale_gradient) {
      const float* input = in_place_ ? saved_input_gpu_.gpu_data() : bottom[0]->gpu_data();
      // A learned scale accumulates; bottom[1]'s diff is overwritten.
      cuda::per_dim_sums(output_diff, input, axes_.outer, axes_.dim, axes_.inner, nullptr,
                         scale_blob(bottom)->mutable_gpu_diff(), learned_scale_);
    }
    // After the sums: in place, dx overwrites dy.
    if (propagate_down[0]) {
      cuda::scale_backward(output_diff, scale_blob(bottom)->gpu_data(),
                           bottom[0]->mutable_gpu_diff(), axes_.outer, axes_.dim, axes_.inner);
    }
  }

  Blob saved_input_gpu_;  // bottom[0] when in place, for forward_gpu
#endif

  Blob* scale_blob(const BlobVec& bottom) const {
    return learned_scale_ ? blobs_[0].get() : bottom[1];
  }

  bool learned_scale_ = true;
  bool bias_term_ = false;
  bool recomputing_ = false;  // forward_cpu called by recompute_top
  bool fused_relu_ = false;  // an in-place ReLU after this layer is done here
  MemoryLayout forward_layout_ = MemoryLayout::kPlain;
  FillerParameter scale_filler_;
  BroadcastAxes axes_;
  // bottom[0] when in place: our own copy, or one the layer before kept
  // (use_kept_bottom_copy), which forward then does not write.
  std::shared_ptr<KeptActivation> saved_ = std::make_shared<KeptActivation>();
  bool saved_is_borrowed_ = false;
  // Backward: per (o, d) row, the sum of dtop and of dtop * bottom.
  std::vector<double> row_sums_;
  std::vector<double> row_dots_;
};

}  // namespace

void register_scale_layer(LayerRegistry& registry) { add_layer<ScaleLayer>(registry, "Scale"); }

}  // namespace xtrain

// Bias (Caffe type "Bias"): adds a bias broadcast along the axes of bottom[0]
// it lines up with (see broadcast_axes.hpp):
//   top[o, d, i] = bottom[o, d, i] + bias[d]
// The bias is bottom[1] when given, else a learned blob spanning
// bias_param.num_axes axes from bias_param.axis (filled by bias_param.filler,
// constant 0 by default). Backward: dbottom = dtop, and
//   dbias[d] = sum over o, i of dtop[o, d, i]
// accumulated into the learned blob's diff (overwriting bottom[1]'s diff).
// Works in place.
//
// With a learned per-channel bias (one value per channel of a 4-axis bottom)
// the layer also computes in the channel-blocked layout
// (core/channel_blocked_layout.hpp): in place in the blob's layout, out of
// place in the one the Net chose for the top. Each lane of a (sample, channel
// block) block is one row, summed with the plain row sums' additions in their
// order (channel_statistics_blocked.hpp), so both layouts give the same bits.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/parallel_loop.hpp"
#include "layers/broadcast_axes.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/per_channel_layer.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/channel_statistics_blocked.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/parallel_blocks.hpp"
#include "layers/per_channel_blocked.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/broadcast_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class BiasLayer : public PerChannelLayer {
 public:
  using PerChannelLayer::PerChannelLayer;
  const char* type() const override { return "Bias"; }
  int min_bottom_blobs() const override { return 1; }
  int max_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    if (bottom.size() > 1) {
      XTRAIN_CHECK(blobs_.empty(), where(), " takes its bias from bottom[1], but has ",
                   blobs_.size(), " stored blobs; remove them or the second bottom");
      return;
    }
    const BiasParameter& bias = param_.bias_param();
    const std::vector<int> shape =
        learned_operand_shape(where(), "bias_param", *bottom[0], bias.axis(), bias.num_axes());
    setup_learnable_blobs(where(), {{"bias", shape, &bias.filler(), "bias_param.filler"}},
                          "(bottom[0]'s dimensions from bias_param.axis over num_axes axes)",
                          &blobs_, random());
    set_param_propagate_down(0, true);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& bias = bottom.size() > 1 ? *bottom[1] : *blobs_[0];
    axes_ = broadcast_axes(where(), "bias_param", *bottom[0], bias,
                           bottom.size() > 1 ? "bottom[1] (the bias)" : "the learned bias",
                           param_.bias_param().axis());
    if (top[0] != bottom[0]) top[0]->reshape_like(*bottom[0]);
    in_place_ = top[0] == bottom[0];
    const Blob& input = *bottom[0];
    blocked_supported_ = bottom.size() == 1 && input.num_axes() == 4 &&
                         axes_.outer == static_cast<std::size_t>(input.shape(0)) &&
                         axes_.dim == static_cast<std::size_t>(input.shape(1));
  }


 protected:
  // Rows are the (o, d) runs of `inner` values that share bias[d], spread
  // over the thread pool in memory order. Backward keeps each row's sum and
  // adds them up by d over o in order, so the gradient does not depend on
  // the thread count.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    forward_layout_ = per_channel_forward_layout(blocked_supported_, in_place_, *bottom[0], *top[0],
                                                 writes_channel_blocked_top(0));
    if (forward_layout_ == MemoryLayout::kChannelBlocked) {
      forward_blocked(*bottom[0], *top[0]);
      return;
    }
    const float* input = bottom[0]->cpu_data();
    const float* bias = (bottom.size() > 1 ? bottom[1] : blobs_[0].get())->cpu_data();
    float* output = top[0]->mutable_cpu_data();
    const std::size_t inner = axes_.inner;
    parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner, [&](std::int64_t row) {
      const float shift = bias[static_cast<std::size_t>(row) % axes_.dim];
      const std::size_t offset = static_cast<std::size_t>(row) * inner;
      const float* x = input + offset;
      float* y = output + offset;
      const ops::Add add;
      for (std::size_t i = 0; i < inner; ++i) y[i] = add(x[i], shift);
    });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (per_channel_backward_layout(blocked_supported_, in_place_, *top[0], forward_layout_) ==
        MemoryLayout::kChannelBlocked) {
      backward_blocked(*top[0], propagate_down[0], *bottom[0]);
      return;
    }
    const float* output_diff = top[0]->cpu_diff();
    const bool learned = bottom.size() == 1;
    if (learned ? param_propagate_down(0) : static_cast<bool>(propagate_down[1])) {
      float* bias_diff = (learned ? blobs_[0].get() : bottom[1])->mutable_cpu_diff();
      if (!learned) std::fill(bias_diff, bias_diff + axes_.dim, 0.0f);
      const std::size_t inner = axes_.inner;
      row_sums_.resize(axes_.outer * axes_.dim);
      parallel_for(static_cast<std::int64_t>(axes_.outer * axes_.dim), inner,
                   [&](std::int64_t row_index) {
                     const auto row = static_cast<std::size_t>(row_index);
                     row_sums_[row] = channel_statistics::sum(output_diff + row * inner, inner);
                   });
      accumulate_row_sums(bias_diff);
    }
    if (propagate_down[0] && top[0] != bottom[0]) {
      const float* source = output_diff;
      float* destination = bottom[0]->mutable_cpu_diff();
      for_each_block(top[0]->count(), 1, [&](std::size_t begin, std::size_t end) {
        std::copy(source + begin, source + end, destination + begin);
      });
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* bias = (bottom.size() > 1 ? bottom[1] : blobs_[0].get())->gpu_data();
    cuda::bias_forward(bottom[0]->gpu_data(), bias, top[0]->mutable_gpu_data(), axes_.outer,
                       axes_.dim, axes_.inner);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    const float* output_diff = top[0]->gpu_diff();
    const bool learned = bottom.size() == 1;
    if (learned ? param_propagate_down(0) : static_cast<bool>(propagate_down[1])) {
      // A learned bias accumulates; a bottom's diff is overwritten.
      float* bias_diff = (learned ? blobs_[0].get() : bottom[1])->mutable_gpu_diff();
      cuda::per_dim_sums(output_diff, nullptr, axes_.outer, axes_.dim, axes_.inner, bias_diff,
                         nullptr, learned);
    }
    if (propagate_down[0] && top[0] != bottom[0]) {
      math::gpu::copy(top[0]->count(), output_diff, bottom[0]->mutable_gpu_diff());
    }
  }
#endif

 private:
  // The bias gradient from the rows' sums, by d over o in order.
  void accumulate_row_sums(float* bias_diff) const {
    for (std::size_t o = 0; o < axes_.outer; ++o) {
      for (std::size_t d = 0; d < axes_.dim; ++d) {
        bias_diff[d] += static_cast<float>(row_sums_[o * axes_.dim + d]);
      }
    }
  }

  // The forward pass on channel-blocked values (a learned per-channel bias;
  // in place, top is bottom).
  void forward_blocked(Blob& bottom, Blob& top) {
    const float* input = bottom.cpu_data_in(MemoryLayout::kChannelBlocked);
    float* output = in_place_ ? top.mutable_cpu_data_in(MemoryLayout::kChannelBlocked)
                              : top.overwrite_cpu_data_in(MemoryLayout::kChannelBlocked);
    const float* bias = blobs_[0]->cpu_data();
    const ChannelBlockedShape shape = channel_blocked_shape(bottom);
    for_each_channel_block(shape, 1, [&](auto lanes, int, int first_channel, std::size_t offset) {
      constexpr int B = decltype(lanes)::value;
      float shift[B];
      for (int l = 0; l < B; ++l) shift[l] = bias[first_channel + l];
      const std::size_t end = offset + static_cast<std::size_t>(shape.spatial) * B;
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) output[at + l] = ops::Add{}(input[at + l], shift[l]);
      }
    });
  }

  // The backward pass on channel-blocked gradients.
  void backward_blocked(Blob& top, bool input_gradient, Blob& bottom) {
    const float* output_diff = top.cpu_diff_in(MemoryLayout::kChannelBlocked);
    const ChannelBlockedShape shape = channel_blocked_shape(bottom);
    if (param_propagate_down(0)) {
      const auto spatial = static_cast<std::size_t>(shape.spatial);
      row_sums_.resize(axes_.outer * axes_.dim);
      for_each_channel_block(
          shape, 1, [&](auto lanes, int n, int first_channel, std::size_t offset) {
            constexpr int B = decltype(lanes)::value;
            channel_statistics::blocked::sum<B>(
                output_diff + offset, spatial,
                row_sums_.data() + static_cast<std::size_t>(n) * axes_.dim + first_channel);
          });
      accumulate_row_sums(blobs_[0]->mutable_cpu_diff());
    }
    if (input_gradient && !in_place_) {
      float* destination = bottom.overwrite_cpu_diff_in(MemoryLayout::kChannelBlocked);
      for_each_block(top.count(), 1, [&](std::size_t begin, std::size_t end) {
        std::copy(output_diff + begin, output_diff + end, destination + begin);
      });
    }
  }

  MemoryLayout forward_layout_ = MemoryLayout::kPlain;
  BroadcastAxes axes_;
  std::vector<double> row_sums_;  // backward: the sum of dtop over each (o, d) row
};

}  // namespace

void register_bias_layer(LayerRegistry& registry) { add_layer<BiasLayer>(registry, "Bias"); }

}  // namespace xtrain

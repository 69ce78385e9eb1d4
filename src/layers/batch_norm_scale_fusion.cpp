// BatchNorm with the in-place Scale after it fused in (batch_norm_layer.hpp,
// EngineHooks::absorb_following_scale), as Caffe's ResNets write every
// normalisation: Convolution -> BatchNorm -> Scale (-> ReLU), all in place.
//
// Apart, with batch statistics, the two sweep the data five times in
// forward and eight in backward: BatchNorm reads x twice and writes its
// output and its kept copy y; the Scale reads y and writes scale * y + bias;
// backward, the Scale reads dtop, its output (the ReLU's mask) and y and
// writes dy, then BatchNorm reads dy and y twice and writes dx. Fused,
// forward writes the Scale's output from the copy while the plane is in
// cache, and backward's first sweep masks dtop, sums for both layers and
// writes dy in one pass over dtop and y (the mask comes from y, not from
// the top's values), so the top's values are not needed in backward at all.
//
// Same bits as apart: every value comes from the functors the Scale and
// BatchNorm call, over the same runs in the same order (the Scale's rows are
// BatchNorm's planes), and what the Net would round in between is rounded
// here at the same point: the Scale's output before the ReLU's mask reads
// it, dy before BatchNorm's sums read it, the Scale's parameter gradients.
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/number_rounding.hpp"
#include "layers/batch_norm_layer.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/channel_statistics_blocked.hpp"
#include "layers/scale_ops.hpp"

namespace xtrain {
namespace {

// The calling thread's scratch for one run of the Scale's output.
float* thread_run(std::size_t count) {
  thread_local std::vector<float> run;
  if (run.size() < count) run.resize(count);
  return run.data();
}

// In the thread's own run: the functors of round_in_place, no parallel region.
void round_run(NumberType type, float* values, std::size_t count) {
  round_run_in_place(type, values, count);
}

}  // namespace

bool BatchNormLayer::absorb_following_scale(const AbsorbableScale& scale) {
  // Batch statistics in place keep the copy the Scale reads; its rows must
  // be this layer's planes.
  if (use_global_stats_ || scale_bias_ || !in_place_ || kept_->empty() || scale.layer == nullptr ||
      kept_type() != output_rounding() ||
      scale.outer != static_cast<std::size_t>(num_) ||
      scale.dim != static_cast<std::size_t>(channels_) || scale.inner != spatial_) {
    return false;
  }
  fused_scale_ = scale;
  const LayerPrecision& precision = scale.layer->precision();
  fused_gradient_rounding_ =
      precision.backward_type != NumberType::kFloat32 && scale.layer->rounds_gradients()
          ? precision.backward_type
          : NumberType::kFloat32;
  return true;
}

void BatchNormLayer::write_scaled_plane(const float* normalised, int channel, std::size_t count,
                                        float* output) const {
  const float factor = fused_scale_.scale->cpu_data()[channel];
  const float shift = fused_scale_.bias ? fused_scale_.bias->cpu_data()[channel] : 0.0f;
  const ops::ScaleShift scale_shift;
  for (std::size_t i = 0; i < count; ++i) output[i] = scale_shift(normalised[i], factor, shift);
  if (fused_scale_.relu) {
    const ops::ReluForward relu{0.0f};
#pragma omp simd
    for (std::size_t i = 0; i < count; ++i) output[i] = relu(output[i]);
  }
}

template <int B>
void BatchNormLayer::write_scaled_block(const float* normalised, int first_channel,
                                        std::size_t positions, float* output) const {
  const float* scale = fused_scale_.scale->cpu_data();
  const float* bias = fused_scale_.bias ? fused_scale_.bias->cpu_data() : nullptr;
  float factor[B];
  float shift[B];
  for (int l = 0; l < B; ++l) {
    factor[l] = scale[first_channel + l];
    shift[l] = bias ? bias[first_channel + l] : 0.0f;
  }
  const ops::ReluForward relu{0.0f};
  const bool fused_relu = fused_scale_.relu;
  for (std::size_t at = 0; at < positions * B; at += B) {
#pragma omp simd
    for (int l = 0; l < B; ++l) {
      const float y = ops::ScaleShift{}(normalised[at + l], factor[l], shift[l]);
      output[at + l] = fused_relu ? relu(y) : y;
    }
  }
}

// batch_norm_blocked.cpp writes blocks of both widths.
template void BatchNormLayer::write_scaled_block<8>(const float*, int, std::size_t, float*) const;
template void BatchNormLayer::write_scaled_block<16>(const float*, int, std::size_t, float*) const;

void BatchNormLayer::recompute_top(const BlobVec&, const BlobVec& top) {
  XTRAIN_ASSERT(can_recompute_top(), "recompute_top on a BatchNorm without a fused Scale");
  // The blob's storage has served others since forward: its layout is
  // theirs, the copy's is the one forward computed in.
  float* output = top[0]->overwrite_cpu_data_in(kept_->layout);
  if (kept_->layout == MemoryLayout::kChannelBlocked) {
    for_each_channel_block(blocked_shape(), 2,
                           [&](auto lanes, int, int first_channel, std::size_t offset) {
                             constexpr int B = decltype(lanes)::value;
                             write_scaled_block<B>(kept_->read(offset, spatial_ * B),
                                                   first_channel, spatial_, output + offset);
                           });
    return;
  }
  for_each_plane(2, [&](std::size_t plane, int c) {
    const std::size_t offset = plane * spatial_;
    write_scaled_plane(kept_->read(offset, spatial_), c, spatial_, output + offset);
  });
}

// The type forward() rounds the top to (the Scale's too: the Net fuses only
// layers of one precision).
NumberType BatchNormLayer::output_rounding() const {
  return precision().forward_type != NumberType::kFloat32 && rounds_tops() ? top_storage(0)
                                                                           : NumberType::kFloat32;
}

float* BatchNormLayer::fused_scale_diff(bool bias) const {
  Blob* blob = bias ? fused_scale_.bias : fused_scale_.scale;
  const int index = bias ? fused_scale_.bias_index : 0;
  if (blob == nullptr || !fused_scale_.layer->param_propagate_down(index)) return nullptr;
  return blob->mutable_cpu_diff();
}

void BatchNormLayer::fused_scale_backward_plain(float* diff) {
  const bool scale_gradient = fused_scale_diff(false) != nullptr;
  const bool bias_gradient = fused_scale_diff(true) != nullptr;
  const NumberType output_type = output_rounding();
  const float* scale = fused_scale_.scale->cpu_data();
  scale_row_sums_.resize(plane_sums_.size());
  scale_row_dots_.resize(plane_sums_.size());
  for_each_plane(8, [&](std::size_t plane, int c) {
    const std::size_t offset = plane * spatial_;
    const float* y = kept_->read(offset, spatial_);
    float* d = diff + offset;
    if (fused_scale_.relu) {  // the mask from the output as the Net stored it
      float* output = thread_run(spatial_);
      write_scaled_plane(y, c, spatial_, output);
      round_run(output_type, output, spatial_);
      const ops::ReluBackward relu{0.0f};
#pragma omp simd
      for (std::size_t s = 0; s < spatial_; ++s) d[s] = relu(output[s], d[s]);
    }
    if (scale_gradient) {
      const auto sums = channel_statistics::sum_and_dot(d, y, spatial_);
      scale_row_sums_[plane] = sums.sum;
      scale_row_dots_[plane] = sums.dot;
    } else if (bias_gradient) {
      scale_row_sums_[plane] = channel_statistics::sum(d, spatial_);
    }
    const ops::Multiply multiply;
    const float factor = scale[c];
    for (std::size_t s = 0; s < spatial_; ++s) d[s] = multiply(d[s], factor);
    round_run(fused_gradient_rounding_, d, spatial_);
    const auto sums = channel_statistics::sum_and_dot(d, y, spatial_);
    plane_sums_[plane] = sums.sum;
    plane_second_sums_[plane] = sums.dot;
  });
  add_fused_scale_gradients();
}

void BatchNormLayer::fused_scale_backward_blocked(float* diff) {
  const bool scale_sums = fused_scale_diff(false) != nullptr || fused_scale_diff(true) != nullptr;
  const NumberType output_type = output_rounding();
  const float* scale = fused_scale_.scale->cpu_data();
  scale_row_sums_.resize(plane_sums_.size());
  scale_row_dots_.resize(plane_sums_.size());
  // A piece of the block at a time, while it is in cache, as the Scale goes.
  constexpr std::size_t kPiecePositions = 64;
  for_each_channel_block(
      blocked_shape(), 8, [&](auto lanes, int n, int first_channel, std::size_t offset) {
        constexpr int B = decltype(lanes)::value;
        float factor[B];
        for (int l = 0; l < B; ++l) factor[l] = scale[first_channel + l];
        const float* y = kept_->read(offset, spatial_ * B);
        float* d = diff + offset;
        channel_statistics::blocked::SumAndDotAccumulator<B> sums;
        float* output = fused_scale_.relu ? thread_run(kPiecePositions * B) : nullptr;
        for (std::size_t first = 0; first < spatial_; first += kPiecePositions) {
          const std::size_t last = std::min(spatial_, first + kPiecePositions);
          const std::size_t begin = first * B;
          const std::size_t end = last * B;
          if (output) {
            write_scaled_block<B>(y + begin, first_channel, last - first, output);
            round_run(output_type, output, end - begin);
            const ops::ReluBackward relu{0.0f};
#pragma omp simd
            for (std::size_t i = begin; i < end; ++i) d[i] = relu(output[i - begin], d[i]);
          }
          if (scale_sums) sums.add(d, y, first, last);
          for (std::size_t at = begin; at < end; at += B) {
#pragma omp simd
            for (int l = 0; l < B; ++l) d[at + l] = ops::Multiply{}(d[at + l], factor[l]);
          }
          round_run(fused_gradient_rounding_, d + begin, end - begin);
        }
        const std::size_t first_plane = plane_index(n, first_channel);
        if (scale_sums) {
          sums.totals(scale_row_sums_.data() + first_plane, scale_row_dots_.data() + first_plane);
        }
        channel_statistics::blocked::sum_and_dot<B>(d, y, spatial_,
                                                    plane_sums_.data() + first_plane,
                                                    plane_second_sums_.data() + first_plane);
      });
  add_fused_scale_gradients();
}

// The Scale's: its rows' sums added up by channel over the samples in
// order, then rounded as its backward rounds its parameters' gradients.
void BatchNormLayer::add_fused_scale_gradients() {
  float* scale_diff = fused_scale_diff(false);
  float* bias_diff = fused_scale_diff(true);
  for (int n = 0; n < num_; ++n) {
    for (int c = 0; c < channels_; ++c) {
      const std::size_t plane = plane_index(n, c);
      if (bias_diff) bias_diff[c] += static_cast<float>(scale_row_sums_[plane]);
      if (scale_diff) scale_diff[c] += static_cast<float>(scale_row_dots_[plane]);
    }
  }
  if (scale_diff) round_run(fused_gradient_rounding_, scale_diff, channels_);
  if (bias_diff) round_run(fused_gradient_rounding_, bias_diff, channels_);
}

}  // namespace xtrain

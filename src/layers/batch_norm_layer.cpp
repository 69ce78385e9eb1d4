// BatchNorm (Caffe type "BatchNorm"): normalises each channel of an
// (N, C, ...) input to zero mean and unit variance. No learned scale or shift
// (a Scale layer with bias_term follows it in Caffe nets), unless
// batch_norm_param.scale_bias (NVIDIA Caffe 0.17) asks for them:
//
//   y   = (bottom - mean[c]) / sqrt(var[c] + eps)
//   top = y                                   (Caffe 1.0)
//   top = scale[c] * y + bias[c]              (scale_bias)
//
// With scale_bias the layer has two more blobs, NVIDIA Caffe's 3 (scale,
// scale_filler, default constant 1) and 4 (bias, bias_filler, default
// constant 0); a scale_filler or bias_filler alone turns scale_bias on, as
// there. They are learned: without ParamSpecs of their own they get lr_mult
// and decay_mult 1 (what NVIDIA Caffe forces; given ones are kept here).
// Backward adds sum(dtop * y) and sum(dtop) over each channel to their
// diffs (accumulating, as every learned blob's diff does) and propagates
// scale[c] * dtop to y, so dbottom below is scale[c] times its formula. y is
// then kept in both modes (the scale's gradient reads it), as a Scale layer
// in place after a Caffe BatchNorm keeps its input.
//
// Training (use_global_stats false, the default in TRAIN): mean and var are
// the batch's, over the N * (H*W...) = m values of each channel, var biased
// (divided by m). Forward also updates the three stored blobs, Caffe's
// unnormalised running sums with f = moving_average_fraction:
//   blob2[0] = f * blob2[0] + 1
//   blob0    = f * blob0 + mean
//   blob1    = f * blob1 + var * m / (m - 1)       (m / (m - 1) = 1 when m = 1)
// Testing (use_global_stats true, the default in TEST): mean = blob0 / blob2[0]
// and var = blob1 / blob2[0] (both 0 when blob2[0] is 0).
//
// Backward, with y the normalised values and the sums over a channel's values:
//   batch stats:  dbottom = (dtop - sum(dtop) / m - y * sum(dtop * y) / m) / sqrt(var + eps)
//   global stats: dbottom = dtop / sqrt(var + eps)
// Works in place (with batch statistics y is kept in kept_, which later
// in-place layers cannot clobber).
//
// A 4-axis input can be channel-blocked (core/channel_blocked_layout.hpp):
// in place the layer then works in the blob's layout, out of place in the
// one the Net chose for the top. Each lane of a (sample, channel block) block
// is one plane, summed with the plain plane sums' additions in their order
// (channel_statistics_blocked.hpp), so both layouts give the same bits.
//
// The blobs are statistics, not parameters: as in Caffe 1.0 the layer gives
// each of them a ParamSpec with lr_mult 0 (a user ParamSpec with another
// lr_mult is an error; three ParamSpecs, the pre-1.0 way of freezing them, are
// replaced, as Caffe's net upgrade does), so the solver never changes them.
//
// On a GPU: our own kernels (cuda/batch_norm_gpu_kernels.hpp), built from the
// functors of batch_norm_math.hpp that the CPU loops call too. Not cuDNN's
// batch normalisation: it keeps exponential running averages (Caffe keeps
// weighted sums and a weight), returns the batch's 1 / sqrt(var + eps) but not
// the variance the running sum needs (recovering it loses precision when var
// is small against eps), and wants a scale and a bias tensor the layer does
// not have.
#include "layers/batch_norm_layer.hpp"

#include <algorithm>
#include <cmath>

#include "layers/batch_norm_math.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/learnable_blobs.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

// NVIDIA Caffe turns scale_bias on for a scale_filler or bias_filler too.
bool has_scale_bias(const BatchNormParameter& bn) {
  return bn.scale_bias() || bn.has_scale_filler() || bn.has_bias_filler();
}

}  // namespace

BatchNormLayer::BatchNormLayer(const LayerParameter& param)
    : PerChannelLayer(param), scale_bias_(has_scale_bias(param.batch_norm_param())) {
  freeze_statistics();
}

void BatchNormLayer::layer_setup(const BlobVec& bottom, const BlobVec&) {
  const BatchNormParameter& bn = param_.batch_norm_param();
  use_global_stats_ = bn.has_use_global_stats() ? bn.use_global_stats() : phase() == TEST;
  moving_average_fraction_ = bn.moving_average_fraction();
  eps_ = bn.eps();
  // Caffe takes both without a word: a negative eps can make var + eps
  // negative (a nan square root), a fraction outside [0, 1] makes the
  // running averages grow instead of settle.
  XTRAIN_CHECK(eps_ >= 0, where(), ": batch_norm_param.eps ", eps_,
               " is negative; give a small positive value (Caffe's default is 1e-5)");
  XTRAIN_CHECK(moving_average_fraction_ >= 0 && moving_average_fraction_ <= 1, where(),
               ": batch_norm_param.moving_average_fraction ", moving_average_fraction_,
               " is outside [0, 1]; give the weight of the old average, e.g. 0.999 (Caffe's "
               "default)");
  const Blob& input = *bottom[0];
  XTRAIN_CHECK(input.num_axes() >= 1, where(), ": the input must have at least one axis, got ",
               input.shape_string());
  channels_ = channels_of(input);
  const std::size_t kept_blobs = scale_bias_ ? kScaleBiasBlobs : kStatBlobs;
  XTRAIN_CHECK(
      blobs_.empty() || blobs_.size() == kept_blobs, where(), " has ", blobs_.size(),
      " stored blobs, but BatchNorm keeps 3 (mean, variance and the moving-average scale factor)",
      scale_bias_ ? " and, with scale_bias, a scale and a bias: 5; were the weights trained "
                    "without scale_bias?"
      : blobs_.size() == kScaleBiasBlobs
          ? "; 5 are those of a BatchNorm with scale and bias: set batch_norm_param { "
            "scale_bias: true }"
          : "");
  FillerParameter zero;  // constant 0
  std::vector<LearnableBlobSpec> specs = {
      {"mean", {channels_}, &zero, "mean"},
      {"variance", {channels_}, &zero, "variance"},
      {"moving-average scale factor", {1}, &zero, "scale factor"}};
  if (scale_bias_) {
    if (bn.has_scale_filler()) {
      scale_filler_ = bn.scale_filler();
    } else {
      scale_filler_.set_type("constant");
      scale_filler_.set_value(1.0f);
    }
    specs.push_back({"scale", {channels_}, &scale_filler_, "batch_norm_param.scale_filler"});
    specs.push_back({"bias", {channels_}, &bn.bias_filler(), "batch_norm_param.bias_filler"});
  }
  setup_learnable_blobs(where(), specs,
                        scale_bias_ ? "(one mean and one variance per input channel, one scale "
                                      "factor, one scale and one bias per channel)"
                                    : "(one mean and one variance per input channel, one scale "
                                      "factor)",
                        &blobs_, random());
  for (int i = 0; i < kStatBlobs; ++i) set_param_propagate_down(i, false);
  if (scale_bias_) {
    set_param_propagate_down(kScaleBlob, true);
    set_param_propagate_down(kBiasBlob, true);
  }
}

void BatchNormLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  // An empty batch (N = 0): nothing to normalise, no statistic moves.
  if (bottom[0]->count() == 0) return;
  forward_layout_ = per_channel_forward_layout(blocked_supported_, in_place_, *bottom[0], *top[0],
                                               writes_channel_blocked_top(0));
  kept_->set_type(kept_type());
  kept_->layout = forward_layout_;
  if (forward_layout_ == MemoryLayout::kChannelBlocked) {
    forward_blocked(*bottom[0], *top[0]);
    return;
  }
  const float* input = bottom[0]->cpu_data();
  float* output = top[0]->mutable_cpu_data();
  const bool kept = keeps_normalised();
  if (use_global_stats_) {
    stored_statistics();
  } else {
    batch_statistics(input);
    update_running_statistics();
  }
  compute_deviations();
  const float* scale = scale_bias_ ? blobs_[kScaleBlob]->cpu_data() : nullptr;
  const float* bias = scale_bias_ ? blobs_[kBiasBlob]->cpu_data() : nullptr;
  // In place, output is input: each value is read before it is written.
  // With stored statistics backward needs only std_, so no copy is kept
  // (but for scale_bias's scale gradient).
  for_each_plane(3, [&](std::size_t plane, int c) {
    const std::size_t offset = plane * spatial_;
    const float mean = mean_[c];
    const float deviation = std_[c];
    const float* x = input + offset;
    float* y = output + offset;
    if (scale) {
      float* y_kept = kept_->write(offset, spatial_);
      const float channel_scale = scale[c];
      const float channel_bias = bias[c];
      for (std::size_t s = 0; s < spatial_; ++s) {
        const float normalised = batch_norm::normalize(x[s], mean, deviation);
        y_kept[s] = normalised;
        y[s] = batch_norm::scale_and_shift(normalised, channel_scale, channel_bias);
      }
      kept_->finish_write(offset, spatial_, y_kept);
    } else if (kept && fused_scale_.layer) {
      // The Scale's output from the copy as kept (as the Scale reads it).
      float* y_kept = kept_->write(offset, spatial_);
      for (std::size_t s = 0; s < spatial_; ++s)
        y_kept[s] = batch_norm::normalize(x[s], mean, deviation);
      kept_->finish_write(offset, spatial_, y_kept);
      write_scaled_plane(kept_->read(offset, spatial_), c, spatial_, y);
    } else if (kept) {
      float* y_kept = kept_->write(offset, spatial_);
      for (std::size_t s = 0; s < spatial_; ++s) {
        const float normalised = batch_norm::normalize(x[s], mean, deviation);
        y[s] = normalised;
        y_kept[s] = normalised;
      }
      kept_->finish_write(offset, spatial_, y_kept);
    } else {
      for (std::size_t s = 0; s < spatial_; ++s)
        y[s] = batch_norm::normalize(x[s], mean, deviation);
    }
  });
}

void BatchNormLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                  const BlobVec& bottom) {
  if (bottom[0]->count() == 0) return;  // an empty batch
  float* scale_diff = learned_diff(kScaleBlob);
  float* bias_diff = learned_diff(kBiasBlob);
  if (!propagate_down[0] && !scale_diff && !bias_diff) return;
  const MemoryLayout layout =
      per_channel_backward_layout(blocked_supported_, in_place_, *top[0], forward_layout_);
  kept_->convert_layout(blocked_shape(), layout);
  if (layout == MemoryLayout::kChannelBlocked) {
    backward_blocked(*top[0], propagate_down[0], *bottom[0], scale_diff, bias_diff);
    return;
  }
  // In place, output_diff and input_diff are one array: every value is read
  // (the sums included) before it is written below.
  const float* output_diff = top[0]->cpu_diff();
  const float* scale = scale_bias_ ? blobs_[kScaleBlob]->cpu_data() : nullptr;
  if (fused_scale_.layer) {
    // dtop becomes the Scale's dbottom (BatchNorm's dtop) in place, summed.
    fused_scale_backward_plain(top[0]->mutable_cpu_diff());
    combine_diff_statistics(nullptr, nullptr);
  } else if (!use_global_stats_ || scale_diff || bias_diff) {
    for_each_plane(4, [&](std::size_t plane, int) {
      const std::size_t offset = plane * spatial_;
      const auto sums = channel_statistics::sum_and_dot(output_diff + offset,
                                                        kept_->read(offset, spatial_), spatial_);
      plane_sums_[plane] = sums.sum;
      plane_second_sums_[plane] = sums.dot;
    });
    combine_diff_statistics(scale_diff, bias_diff);
  }
  if (!propagate_down[0]) return;
  float* input_diff = bottom[0]->mutable_cpu_diff();
  if (use_global_stats_) {
    for_each_plane(1, [&](std::size_t plane, int c) {
      const std::size_t offset = plane * spatial_;
      const float deviation = std_[c];
      const float* dy = output_diff + offset;
      float* dx = input_diff + offset;
      if (scale) {
        const float channel_scale = scale[c];
        for (std::size_t s = 0; s < spatial_; ++s)
          dx[s] = batch_norm::scaled_global_gradient(dy[s], deviation, channel_scale);
      } else {
        for (std::size_t s = 0; s < spatial_; ++s)
          dx[s] = batch_norm::global_gradient(dy[s], deviation);
      }
    });
    return;
  }
  const std::vector<float>& diff_mean = mean_;
  const std::vector<float>& diff_dot_y_mean = variance_;
  for_each_plane(4, [&](std::size_t plane, int c) {
    const std::size_t offset = plane * spatial_;
    const float mean = diff_mean[c];
    const float dot_mean = diff_dot_y_mean[c];
    const float deviation = std_[c];
    const float* dy = output_diff + offset;
    const float* y = kept_->read(offset, spatial_);
    float* dx = input_diff + offset;
    if (scale) {
      const float channel_scale = scale[c];
      for (std::size_t s = 0; s < spatial_; ++s) {
        dx[s] = batch_norm::scaled_batch_gradient(dy[s], y[s], mean, dot_mean, deviation,
                                                  channel_scale);
      }
    } else {
      for (std::size_t s = 0; s < spatial_; ++s)
        dx[s] = batch_norm::batch_gradient(dy[s], y[s], mean, dot_mean, deviation);
    }
  });
}

void BatchNormLayer::freeze_statistics() {
  if (param_.param_size() == kStatBlobs) param_.clear_param();
  for (int i = 0; i < std::min(param_.param_size(), kStatBlobs); ++i) {
    XTRAIN_CHECK(param_.param(i).lr_mult() == 0, where(), ": param ", i, " has lr_mult ",
                 param_.param(i).lr_mult(),
                 ", but BatchNorm's blobs 0-2 are running statistics, not learnable "
                 "parameters; remove the param entries (a Scale layer after BatchNorm, or "
                 "batch_norm_param { scale_bias: true }, learns the scale and shift)");
  }
  while (param_.param_size() < kStatBlobs) param_.add_param()->set_lr_mult(0);
}

void BatchNormLayer::batch_statistics(const float* input) {
  for_each_plane(5, [&](std::size_t plane, int) {
    const std::size_t offset = plane * spatial_;
    const double total = channel_statistics::sum(input + offset, spatial_);
    plane_sums_[plane] = total;
    plane_second_sums_[plane] = channel_statistics::squared_deviation_sum(
        input + offset, total / static_cast<double>(spatial_), spatial_);
  });
  combine_plane_statistics();
}

void BatchNormLayer::combine_plane_statistics() {
  const double m = static_cast<double>(num_) * spatial_;
  const double per_plane = static_cast<double>(spatial_);
  for (int c = 0; c < channels_; ++c) {
    double total = 0;
    for (int n = 0; n < num_; ++n) total += plane_sums_[plane_index(n, c)];
    const double mean = total / m;
    double squares = 0;
    for (int n = 0; n < num_; ++n) {
      const std::size_t plane = plane_index(n, c);
      const double shift = plane_sums_[plane] / per_plane - mean;
      squares += plane_second_sums_[plane] + per_plane * shift * shift;
    }
    mean_[c] = static_cast<float>(mean);
    variance_[c] = static_cast<float>(squares / m);
  }
}

void BatchNormLayer::stored_statistics() {
  const float factor = batch_norm::stored_factor(blobs_[2]->cpu_data()[0]);
  for (int c = 0; c < channels_; ++c) {
    mean_[c] = factor * blobs_[0]->cpu_data()[c];
    variance_[c] = factor * blobs_[1]->cpu_data()[c];
  }
}

void BatchNormLayer::compute_deviations() {
  for (int c = 0; c < channels_; ++c) std_[c] = batch_norm::deviation(variance_[c], eps_);
}

void BatchNormLayer::combine_diff_statistics(float* scale_diff, float* bias_diff) {
  const double m = static_cast<double>(num_) * spatial_;
  for (int c = 0; c < channels_; ++c) {
    double diff_total = 0;
    double diff_dot_y_total = 0;
    for (int n = 0; n < num_; ++n) {
      diff_total += plane_sums_[plane_index(n, c)];
      diff_dot_y_total += plane_second_sums_[plane_index(n, c)];
    }
    mean_[c] = static_cast<float>(diff_total / m);
    variance_[c] = static_cast<float>(diff_dot_y_total / m);
    if (scale_diff) scale_diff[c] += static_cast<float>(diff_dot_y_total);
    if (bias_diff) bias_diff[c] += static_cast<float>(diff_total);
  }
}

void BatchNormLayer::update_running_statistics() {
  const batch_norm::RunningSums sums{moving_average_fraction_,
                                     batch_norm::RunningSums::correction_for(sample_count())};
  float* mean_sum = blobs_[0]->mutable_cpu_data();
  float* variance_sum = blobs_[1]->mutable_cpu_data();
  float* weight = blobs_[2]->mutable_cpu_data();
  weight[0] = sums.weight(weight[0]);
  for (int c = 0; c < channels_; ++c) {
    mean_sum[c] = sums.mean_sum(mean_sum[c], mean_[c]);
    variance_sum[c] = sums.variance_sum(variance_sum[c], variance_[c]);
  }
}

void register_batch_norm_layer(LayerRegistry& registry) {
  add_layer<BatchNormLayer>(registry, "BatchNorm");
}

}  // namespace xtrain

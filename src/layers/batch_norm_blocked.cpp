// BatchNorm's CPU passes on channel-blocked values (batch_norm_layer.hpp):
// each lane of a (sample, channel block) block is one plane, summed with the
// plain plane sums' additions in their order, so both layouts give the same
// bits.
#include "layers/batch_norm_layer.hpp"

#include "layers/batch_norm_math.hpp"
#include "layers/channel_statistics_blocked.hpp"

namespace xtrain {

void BatchNormLayer::forward_blocked(Blob& bottom, Blob& top) {
  const ChannelBlockedShape shape = blocked_shape();
  const float* input = bottom.cpu_data_in(MemoryLayout::kChannelBlocked);
  float* output = in_place_ ? top.mutable_cpu_data_in(MemoryLayout::kChannelBlocked)
                            : top.overwrite_cpu_data_in(MemoryLayout::kChannelBlocked);
  const bool kept = keeps_normalised();
  if (use_global_stats_) {
    stored_statistics();
  } else {
    for_each_channel_block(shape, 5,
                           [&](auto lanes, int n, int first_channel, std::size_t offset) {
                             constexpr int B = decltype(lanes)::value;
                             double* sums = plane_sums_.data() + plane_index(n, first_channel);
                             channel_statistics::blocked::sum<B>(input + offset, spatial_, sums);
                             double centers[B];
                             for (int l = 0; l < B; ++l) {
                               centers[l] = sums[l] / static_cast<double>(spatial_);
                             }
                             channel_statistics::blocked::squared_deviation_sum<B>(
                                 input + offset, centers, spatial_,
                                 plane_second_sums_.data() + plane_index(n, first_channel));
                           });
    combine_plane_statistics();
    update_running_statistics();
  }
  compute_deviations();
  const float* scale_data = scale_bias_ ? blobs_[kScaleBlob]->cpu_data() : nullptr;
  const float* bias_data = scale_bias_ ? blobs_[kBiasBlob]->cpu_data() : nullptr;
  for_each_channel_block(shape, 3, [&](auto lanes, int, int first_channel, std::size_t offset) {
    constexpr int B = decltype(lanes)::value;
    float mean[B];
    float deviation[B];
    for (int l = 0; l < B; ++l) {
      mean[l] = mean_[first_channel + l];
      deviation[l] = std_[first_channel + l];
    }
    const std::size_t end = offset + spatial_ * B;
    if (scale_data) {
      float scale[B];
      float bias[B];
      for (int l = 0; l < B; ++l) {
        scale[l] = scale_data[first_channel + l];
        bias[l] = bias_data[first_channel + l];
      }
      float* run = kept_->write(offset, spatial_ * B);  // from `offset` on
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          const float normalised = batch_norm::normalize(input[at + l], mean[l], deviation[l]);
          run[at - offset + l] = normalised;
          output[at + l] = batch_norm::scale_and_shift(normalised, scale[l], bias[l]);
        }
      }
      kept_->finish_write(offset, spatial_ * B, run);
    } else if (kept && fused_scale_.layer) {
      // The Scale's output from the copy as kept (as the Scale reads it).
      float* run = kept_->write(offset, spatial_ * B);
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          run[at - offset + l] = batch_norm::normalize(input[at + l], mean[l], deviation[l]);
        }
      }
      kept_->finish_write(offset, spatial_ * B, run);
      write_scaled_block<B>(kept_->read(offset, spatial_ * B), first_channel, spatial_,
                            output + offset);
    } else if (kept) {
      float* run = kept_->write(offset, spatial_ * B);
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          const float normalised = batch_norm::normalize(input[at + l], mean[l], deviation[l]);
          output[at + l] = normalised;
          run[at - offset + l] = normalised;
        }
      }
      kept_->finish_write(offset, spatial_ * B, run);
    } else {
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          output[at + l] = batch_norm::normalize(input[at + l], mean[l], deviation[l]);
        }
      }
    }
  });
}

void BatchNormLayer::backward_blocked(Blob& top, bool input_gradient, Blob& bottom, float* scale_diff,
                      float* bias_diff) {
  const ChannelBlockedShape shape = blocked_shape();
  const bool batch = !use_global_stats_;
  const bool kept = keeps_normalised();
  if (fused_scale_.layer) {
    // dtop becomes the Scale's dbottom (BatchNorm's dtop) in place, summed.
    fused_scale_backward_blocked(top.mutable_cpu_diff_in(MemoryLayout::kChannelBlocked));
    combine_diff_statistics(nullptr, nullptr);
  }
  const float* output_diff = top.cpu_diff_in(MemoryLayout::kChannelBlocked);
  if (!fused_scale_.layer && (batch || scale_diff || bias_diff)) {
    for_each_channel_block(shape, 4,
                           [&](auto lanes, int n, int first_channel, std::size_t offset) {
                             constexpr int B = decltype(lanes)::value;
                             channel_statistics::blocked::sum_and_dot<B>(
                                 output_diff + offset, kept_->read(offset, spatial_ * B),
                                 spatial_,
                                 plane_sums_.data() + plane_index(n, first_channel),
                                 plane_second_sums_.data() + plane_index(n, first_channel));
                           });
    combine_diff_statistics(scale_diff, bias_diff);
  }
  if (!input_gradient) return;
  float* input_diff = in_place_ ? bottom.mutable_cpu_diff_in(MemoryLayout::kChannelBlocked)
                                : bottom.overwrite_cpu_diff_in(MemoryLayout::kChannelBlocked);
  const float* scale_data = scale_bias_ ? blobs_[kScaleBlob]->cpu_data() : nullptr;
  for_each_channel_block(shape, 4, [&](auto lanes, int, int first_channel, std::size_t offset) {
    constexpr int B = decltype(lanes)::value;
    float deviation[B];
    float diff_mean[B];
    float diff_dot_y_mean[B];
    float scale[B];
    for (int l = 0; l < B; ++l) {
      deviation[l] = std_[first_channel + l];
      diff_mean[l] = batch ? mean_[first_channel + l] : 0.0f;
      diff_dot_y_mean[l] = batch ? variance_[first_channel + l] : 0.0f;
      scale[l] = scale_data ? scale_data[first_channel + l] : 1.0f;
    }
    const std::size_t end = offset + spatial_ * B;
    // The kept values of this run, from `offset` on (batch statistics, or
    // scale_bias: the only cases that keep them).
    const float* normalised = kept ? kept_->read(offset, spatial_ * B) : nullptr;
    if (batch && scale_data) {
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          input_diff[at + l] = batch_norm::scaled_batch_gradient(
              output_diff[at + l], normalised[at - offset + l], diff_mean[l],
              diff_dot_y_mean[l], deviation[l], scale[l]);
        }
      }
    } else if (batch) {
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          input_diff[at + l] = batch_norm::batch_gradient(
              output_diff[at + l], normalised[at - offset + l], diff_mean[l],
              diff_dot_y_mean[l], deviation[l]);
        }
      }
    } else if (scale_data) {
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          input_diff[at + l] =
              batch_norm::scaled_global_gradient(output_diff[at + l], deviation[l], scale[l]);
        }
      }
    } else {
      for (std::size_t at = offset; at < end; at += B) {
#pragma omp simd
        for (int l = 0; l < B; ++l) {
          input_diff[at + l] = batch_norm::global_gradient(output_diff[at + l], deviation[l]);
        }
      }
    }
  });
}

}  // namespace xtrain

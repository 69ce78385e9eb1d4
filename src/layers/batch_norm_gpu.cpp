// BatchNorm's GPU passes (batch_norm_layer.hpp): our own kernels
// (batch_norm_gpu_kernels.hpp), built from the functors of
// batch_norm_math.hpp that the CPU loops call too.
#include "layers/batch_norm_layer.hpp"

#ifdef XTRAIN_USE_CUDA

namespace xtrain {

void BatchNormLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  // An empty batch (N = 0): nothing to normalise, no statistic moves.
  if (bottom[0]->count() == 0) return;
  if (!gpu_statistics_) reshape_gpu(bottom[0]->count());  // device set after reshape
  const cuda::BatchNormShape shape = gpu_shape();
  const float* input = bottom[0]->gpu_data();
  float* output = top[0]->mutable_gpu_data();
  float* mean = gpu_channel_values(0);
  float* variance = gpu_channel_values(1);
  float* deviation = gpu_channel_values(2);
  cuda::BatchNormScaleBias scale_bias;
  if (scale_bias_) {
    scale_bias.scale = blobs_[kScaleBlob]->gpu_data();
    scale_bias.bias = blobs_[kBiasBlob]->gpu_data();
  }
  // No kept copy for an empty input (reshape_gpu allocates none).
  float* kept = keeps_normalised() && gpu_x_norm_
                    ? static_cast<float*>(gpu_x_norm_->mutable_gpu_data())
                    : nullptr;
  if (use_global_stats_) {
    // The kernel only reads the stored blobs in this mode: read access
    // keeps their host copies valid.
    cuda::batch_norm_finish_statistics_gpu(
        shape, true, moving_average_fraction_, eps_, const_cast<float*>(blobs_[0]->gpu_data()),
        const_cast<float*>(blobs_[1]->gpu_data()), const_cast<float*>(blobs_[2]->gpu_data()),
        mean, variance, deviation);
    cuda::batch_norm_normalize_gpu(shape, input, mean, deviation, scale_bias, output, kept);
    return;
  }
  cuda::batch_norm_statistics_gpu(shape, input, mean, variance);
  cuda::batch_norm_finish_statistics_gpu(
      shape, false, moving_average_fraction_, eps_, blobs_[0]->mutable_gpu_data(),
      blobs_[1]->mutable_gpu_data(), blobs_[2]->mutable_gpu_data(), mean, variance, deviation);
  cuda::batch_norm_normalize_gpu(shape, input, mean, deviation, scale_bias, output, kept);
}

void BatchNormLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                  const BlobVec& bottom) {
  if (bottom[0]->count() == 0) return;  // an empty batch
  cuda::BatchNormScaleBias scale_bias;
  if (scale_bias_) {
    scale_bias.scale = blobs_[kScaleBlob]->gpu_data();
    if (param_propagate_down(kScaleBlob)) {
      scale_bias.scale_diff = blobs_[kScaleBlob]->mutable_gpu_diff();
    }
    if (param_propagate_down(kBiasBlob)) {
      scale_bias.bias_diff = blobs_[kBiasBlob]->mutable_gpu_diff();
    }
  }
  if (!propagate_down[0] && !scale_bias.scale_diff && !scale_bias.bias_diff) return;
  const cuda::BatchNormShape shape = gpu_shape();
  const float* output_diff = top[0]->gpu_diff();
  float* input_diff = propagate_down[0] ? bottom[0]->mutable_gpu_diff() : nullptr;
  const float* deviation = gpu_channel_values(2);
  // Null for an empty input (nothing to propagate) and, without
  // scale_bias, with stored statistics (not read then).
  const float* normalised = gpu_x_norm_ && keeps_normalised()
                                ? static_cast<const float*>(gpu_x_norm_->gpu_data())
                                : nullptr;
  if (use_global_stats_) {
    cuda::batch_norm_global_backward_gpu(shape, output_diff, normalised, deviation, scale_bias,
                                         gpu_channel_values(3), gpu_channel_values(4),
                                         input_diff);
    return;
  }
  if (!normalised) return;  // an empty input: nothing to propagate
  cuda::batch_norm_backward_gpu(shape, output_diff, normalised, deviation, scale_bias,
                                gpu_channel_values(3), gpu_channel_values(4), input_diff);
}

void BatchNormLayer::reshape_gpu(std::size_t count) {
  const std::size_t statistics_bytes = 5 * static_cast<std::size_t>(channels_) * sizeof(float);
  if (!gpu_statistics_ || gpu_statistics_->size() < statistics_bytes) {
    gpu_statistics_ = std::make_unique<SyncedMemory>(statistics_bytes);
  }
  const std::size_t kept_bytes = keeps_normalised() ? count * sizeof(float) : 0;
  if (kept_bytes > 0 && (!gpu_x_norm_ || gpu_x_norm_->size() < kept_bytes)) {
    gpu_x_norm_ = std::make_unique<SyncedMemory>(kept_bytes);
  }
}

}  // namespace xtrain

#endif  // XTRAIN_USE_CUDA

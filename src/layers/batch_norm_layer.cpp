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
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/parallel_loop.hpp"
#include "layers/batch_norm_math.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/channel_statistics_blocked.hpp"
#include "layers/learnable_blobs.hpp"
#include "layers/per_channel_blocked.hpp"
#include "layers/per_channel_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include <memory>

#include "layers/batch_norm_gpu_kernels.hpp"
#endif

namespace xtrain {
namespace {

constexpr int kStatBlobs = 3;
constexpr int kScaleBlob = 3;  // with scale_bias
constexpr int kBiasBlob = 4;
constexpr int kScaleBiasBlobs = 5;

// NVIDIA Caffe turns scale_bias on for a scale_filler or bias_filler too.
bool has_scale_bias(const BatchNormParameter& bn) {
  return bn.scale_bias() || bn.has_scale_filler() || bn.has_bias_filler();
}

class BatchNormLayer : public PerChannelLayer {
 public:
  explicit BatchNormLayer(const LayerParameter& param)
      : PerChannelLayer(param), scale_bias_(has_scale_bias(param.batch_norm_param())) {
    freeze_statistics();
  }

  const char* type() const override { return "BatchNorm"; }

  // Without the param specs freeze_statistics() added: written back, they
  // are the deprecated form that loading upgrades with a warning. Named
  // specs (sharing the statistics) and specs for scale_bias's blobs are the
  // user's and stay.
  void to_proto(LayerParameter* param, bool write_diff) const override {
    Layer::to_proto(param, write_diff);
    if (param->param_size() > kStatBlobs) return;
    for (const ParamSpec& spec : param->param()) {
      if (spec.has_name()) return;
    }
    param->clear_param();
  }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
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

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() >= 1 && channels_of(input) == channels_, where(), ": the input ",
                 input.shape_string(), " has ", input.num_axes() >= 1 ? channels_of(input) : 0,
                 " channels (axis 1), but the layer was set up for ", channels_);
    top[0]->reshape_like(input);
    num_ = input.shape(0);
    spatial_ =
        num_ * channels_ == 0 ? 0 : input.count() / (static_cast<std::size_t>(num_) * channels_);
    kept_->resize(!keeps_normalised() || device().is_gpu() ? 0 : input.count());
#ifdef XTRAIN_USE_CUDA
    if (device().is_gpu()) reshape_gpu(input.count());
#endif
    mean_.resize(channels_);
    variance_.resize(channels_);
    std_.resize(channels_);
    plane_sums_.resize(static_cast<std::size_t>(num_) * channels_);
    plane_second_sums_.resize(static_cast<std::size_t>(num_) * channels_);
    in_place_ = top[0] == bottom[0];
    blocked_supported_ = input.num_axes() == 4;
  }

  std::size_t buffer_bytes() const override {
    return kept_->bytes_held();
  }
  // Backward reads kept_ (batch statistics, scale_bias) or std_, never the blobs' values.
  bool backward_touches_bottom_data(int) const override { return false; }
  bool backward_touches_top_data(int) const override { return false; }
  // kept_ is the top as forward wrote it (not with scale_bias: then it is
  // y, before the scale and bias), read by backward only.
  std::shared_ptr<KeptActivation> kept_top_copy() override {
    return kept_->empty() || scale_bias_ ? nullptr : kept_;
  }

 protected:
  // Each sweep runs over the (sample, channel) planes in memory order, split
  // across the thread pool; per-plane sums are kept and added up by channel
  // over the samples in order, so the statistics do not depend on the thread
  // count. (Visiting one channel's planes together would revisit them from
  // cache, but they lie C*H*W values apart, which for common shapes maps them
  // onto the same cache sets: they evict each other.) Forward reads the input
  // twice: once for the statistics, once to normalise.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
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

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
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
    if (!use_global_stats_ || scale_diff || bias_diff) {
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

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
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

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
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
#endif

 private:
#ifdef XTRAIN_USE_CUDA
  // Device memory: five per-channel arrays (mean, variance, deviation, and
  // backward's two gradient means), and the kept output with batch statistics.
  void reshape_gpu(std::size_t count) {
    const std::size_t statistics_bytes = 5 * static_cast<std::size_t>(channels_) * sizeof(float);
    if (!gpu_statistics_ || gpu_statistics_->size() < statistics_bytes) {
      gpu_statistics_ = std::make_unique<SyncedMemory>(statistics_bytes);
    }
    const std::size_t kept_bytes = keeps_normalised() ? count * sizeof(float) : 0;
    if (kept_bytes > 0 && (!gpu_x_norm_ || gpu_x_norm_->size() < kept_bytes)) {
      gpu_x_norm_ = std::make_unique<SyncedMemory>(kept_bytes);
    }
  }
  float* gpu_channel_values(int which) {
    return static_cast<float*>(gpu_statistics_->mutable_gpu_data()) +
           static_cast<std::size_t>(which) * channels_;
  }
  cuda::BatchNormShape gpu_shape() const { return {num_, channels_, spatial_}; }

  std::unique_ptr<SyncedMemory> gpu_statistics_;
  std::unique_ptr<SyncedMemory> gpu_x_norm_;
#endif

  unsigned long long sample_count() const {
    return static_cast<unsigned long long>(num_) * static_cast<unsigned long long>(spatial_);
  }

  static int channels_of(const Blob& input) { return input.num_axes() == 1 ? 1 : input.shape(1); }

  // Caffe 1.0 masks the statistics from the solver through ParamSpecs with
  // lr_mult 0; the Net reads these from layer_param().
  // With scale_bias, specs 3 and 4 (scale, bias) are the user's to give.
  void freeze_statistics() {
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

  std::size_t plane_index(int n, int c) const {
    return static_cast<std::size_t>(n) * channels_ + c;
  }

  // body(plane, channel) for every (sample, channel) plane, which holds
  // `spatial_` values from plane * spatial_ on, spread over the thread pool; `work_per_value` is
  // roughly the float operations per value.
  template <typename Body>
  void for_each_plane(std::size_t work_per_value, Body body) const {
    const auto planes = static_cast<std::int64_t>(num_) * channels_;
    parallel_for(planes, spatial_ * work_per_value, [&](std::int64_t plane) {
      body(static_cast<std::size_t>(plane), static_cast<int>(plane % channels_));
    });
  }

  // mean_ and variance_ (biased) of the batch, in one sweep: each plane's sum
  // and its squared deviations from its own mean, then by channel
  //   mean = sum_n S_n / m
  //   var  = sum_n (Q_n + P * (S_n / P - mean)^2) / m
  // with P values per plane (the exact pooling of the planes' variances).
  void batch_statistics(const float* input) {
    for_each_plane(5, [&](std::size_t plane, int) {
      const std::size_t offset = plane * spatial_;
      const double total = channel_statistics::sum(input + offset, spatial_);
      plane_sums_[plane] = total;
      plane_second_sums_[plane] = channel_statistics::squared_deviation_sum(
          input + offset, total / static_cast<double>(spatial_), spatial_);
    });
    combine_plane_statistics();
  }

  // mean_ and variance_ from the plane sums of either layout.
  void combine_plane_statistics() {
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

  // mean = blob0 / blob2[0], var = blob1 / blob2[0] (0 when blob2[0] is 0).
  void stored_statistics() {
    const float factor = batch_norm::stored_factor(blobs_[2]->cpu_data()[0]);
    for (int c = 0; c < channels_; ++c) {
      mean_[c] = factor * blobs_[0]->cpu_data()[c];
      variance_[c] = factor * blobs_[1]->cpu_data()[c];
    }
  }

  void compute_deviations() {
    for (int c = 0; c < channels_; ++c) std_[c] = batch_norm::deviation(variance_[c], eps_);
  }

  // Backward, from the planes' sums of dtop and dtop . y: sum(dtop) / m
  // into mean_ and sum(dtop * y) / m into variance_ (forward is done with
  // them); with scale_bias the sums themselves are the bias's and the
  // scale's gradients, added to the diffs given (null: not wanted).
  void combine_diff_statistics(float* scale_diff, float* bias_diff) {
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

  // Whether forward keeps y for backward: with batch statistics (their
  // gradient reads it) and with scale_bias (the scale's gradient does).
  bool keeps_normalised() const { return !use_global_stats_ || scale_bias_; }
  // The type kept_ holds them in: the top's storage type when they are the
  // top (the Net rounds the top to it, so 16 bits hold the same values),
  // fp32 with scale_bias (the values before the scale are not the top).
  NumberType kept_type() const { return scale_bias_ ? NumberType::kFloat32 : top_storage(0); }

  // The diff of scale_bias's blob `index` when backward should add to it, else null.
  float* learned_diff(int index) {
    if (!scale_bias_ || !param_propagate_down(index)) return nullptr;
    return blobs_[index]->mutable_cpu_diff();
  }

  ChannelBlockedShape blocked_shape() const {
    return {num_, channels_, static_cast<std::int64_t>(spatial_), channel_block()};
  }

  // The forward pass on channel-blocked values (in place: top is bottom).
  void forward_blocked(Blob& bottom, Blob& top) {
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

  // The backward pass on channel-blocked gradients (and kept_, already
  // in that layout); the bottom's gradient when `input_gradient`, the
  // scale's and bias's into the diffs given (not null).
  void backward_blocked(Blob& top, bool input_gradient, Blob& bottom, float* scale_diff,
                        float* bias_diff) {
    const ChannelBlockedShape shape = blocked_shape();
    const float* output_diff = top.cpu_diff_in(MemoryLayout::kChannelBlocked);
    const bool batch = !use_global_stats_;
    const bool kept = keeps_normalised();
    if (batch || scale_diff || bias_diff) {
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

  void update_running_statistics() {
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

  bool scale_bias_ = false;
  FillerParameter scale_filler_;  // with scale_bias: the given one or constant 1
  bool use_global_stats_ = false;
  float moving_average_fraction_ = 0.999f;
  float eps_ = 1e-5f;
  int channels_ = 0;
  MemoryLayout forward_layout_ = MemoryLayout::kPlain;
  // The output, kept for backward (batch statistics only), which an in-place
  // Scale after this layer may read too (EngineHooks::kept_top_copy).
  std::shared_ptr<KeptActivation> kept_ = std::make_shared<KeptActivation>();

  int num_ = 0;
  std::size_t spatial_ = 0;
  std::vector<float> mean_;
  std::vector<float> variance_;
  std::vector<float> std_;  // sqrt(variance + eps)
  // Per (sample, channel) plane: a sum, and a second one (squared deviations
  // in forward, dtop . y in backward).
  std::vector<double> plane_sums_;
  std::vector<double> plane_second_sums_;
};

}  // namespace

void register_batch_norm_layer(LayerRegistry& registry) {
  add_layer<BatchNormLayer>(registry, "BatchNorm");
}

}  // namespace xtrain

// BatchNorm, Caffe's: normalises each channel by the batch's statistics (or
// the stored ones), keeping running sums as its blobs. The class, shared by
// the files that define its passes: batch_norm_layer.cpp (set-up, the plain
// CPU passes, and the design), batch_norm_blocked.cpp (the CPU passes on
// channel-blocked values), batch_norm_gpu.cpp (the GPU passes). Internal to
// the library: users create the layer through the registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine_hooks.hpp"
#include "core/parallel_loop.hpp"
#include "layers/per_channel_blocked.hpp"
#include "layers/per_channel_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/batch_norm_gpu_kernels.hpp"
#endif

namespace xtrain {

class BatchNormLayer : public PerChannelLayer {
 public:
  static constexpr int kStatBlobs = 3;
  static constexpr int kScaleBlob = 3;  // with scale_bias
  static constexpr int kBiasBlob = 4;
  static constexpr int kScaleBiasBlobs = 5;

  explicit BatchNormLayer(const LayerParameter& param);

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

  void layer_setup(const BlobVec& bottom, const BlobVec&) override;

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

  std::size_t buffer_bytes() const override { return kept_->bytes_held(); }
  // Backward reads kept_ (batch statistics, scale_bias) or std_, never the blobs' values.
  bool backward_touches_bottom_data(int) const override { return false; }
  bool backward_touches_top_data(int) const override { return false; }
  // kept_ is the top as forward wrote it (not with scale_bias: then it is
  // y, before the scale and bias), read by backward only.
  std::shared_ptr<KeptActivation> kept_top_copy() override {
    return kept_->empty() || scale_bias_ ? nullptr : kept_;
  }

  // The in-place Scale after it (and its ReLU), done here: forward writes
  // its output from the kept copy, backward computes its gradients in the
  // sweep that sums BatchNorm's (batch_norm_scale_fusion.cpp). Only with
  // batch statistics in place, where the copy is kept.
  bool absorb_following_scale(const AbsorbableScale& scale) override;
  // Fused, the top is the Scale's output again from the kept copy.
  bool can_recompute_top() const override { return fused_scale_.layer != nullptr; }
  void recompute_top(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  // Each sweep runs over the (sample, channel) planes in memory order, split
  // across the thread pool; per-plane sums are kept and added up by channel
  // over the samples in order, so the statistics do not depend on the thread
  // count. (Visiting one channel's planes together would revisit them from
  // cache, but they lie C*H*W values apart, which for common shapes maps them
  // onto the same cache sets: they evict each other.) Forward reads the input
  // twice: once for the statistics, once to normalise.
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override;

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
#ifdef XTRAIN_USE_CUDA
  // Device memory: five per-channel arrays (mean, variance, deviation, and
  // backward's two gradient means), and the kept output with batch statistics.
  void reshape_gpu(std::size_t count);
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
  void freeze_statistics();

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
  void batch_statistics(const float* input);

  // mean_ and variance_ from the plane sums of either layout.
  void combine_plane_statistics();

  // mean = blob0 / blob2[0], var = blob1 / blob2[0] (0 when blob2[0] is 0).
  void stored_statistics();

  void compute_deviations();

  // Backward, from the planes' sums of dtop and dtop . y: sum(dtop) / m
  // into mean_ and sum(dtop * y) / m into variance_ (forward is done with
  // them); with scale_bias the sums themselves are the bias's and the
  // scale's gradients, added to the diffs given (null: not wanted).
  void combine_diff_statistics(float* scale_diff, float* bias_diff);

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
  void forward_blocked(Blob& bottom, Blob& top);

  // The backward pass on channel-blocked gradients (and kept_, already
  // in that layout); the bottom's gradient when `input_gradient`, the
  // scale's and bias's into the diffs given (not null).
  void backward_blocked(Blob& top, bool input_gradient, Blob& bottom, float* scale_diff,
                        float* bias_diff);

  void update_running_statistics();

  // The fused Scale's passes (batch_norm_scale_fusion.cpp). Its output from
  // the kept normalised values: one plane of channel c, or one block of
  // lanes from first_channel on; in `type` when it is 16-bit (what the Net
  // rounds the top to), for the ReLU's mask in backward.
  void write_scaled_plane(const float* normalised, int channel, std::size_t count,
                          float* output) const;
  template <int B>
  void write_scaled_block(const float* normalised, int first_channel, std::size_t positions,
                          float* output) const;
  // Backward's first sweep with the Scale fused: per plane (block), mask
  // dtop by the ReLU, the Scale's sums, dtop * scale into the diff (dy of
  // BatchNorm, rounded as the Scale's backward rounds it), BatchNorm's sums
  // of it; then the Scale's parameter gradients. `diff` is the top's, in
  // the layout given.
  void fused_scale_backward_plain(float* diff);
  void fused_scale_backward_blocked(float* diff);
  void add_fused_scale_gradients();
  float* fused_scale_diff(bool bias) const;
  NumberType output_rounding() const;

  // The fused Scale, or layer null.
  AbsorbableScale fused_scale_;
  NumberType fused_gradient_rounding_ = NumberType::kFloat32;  // the Scale's backward rounding
  std::vector<double> scale_row_sums_;  // per plane: sum(dtop), sum(dtop * y)
  std::vector<double> scale_row_dots_;

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


}  // namespace xtrain

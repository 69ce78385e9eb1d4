// LossLayer: what Caffe's loss layers share.
//
//  - The first top is a scalar loss weighted 1 unless the prototxt gives
//    loss_weight (further tops, where a layer has them, are weighted 0).
//  - Bottom 0 holds the predictions and bottom 1 the labels or targets; they
//    must agree in their first (batch) dimension.
//  - Labels are data: force_backward does not reach bottom 1, and asking for
//    its gradient is an error.
//  - loss_param.normalization picks the divisor of the summed loss:
//      FULL = every position, VALID = the positions not carrying ignore_label,
//      BATCH_SIZE = the batch size, NONE = 1; never below 1.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "xtrain/layer.hpp"

namespace xtrain {

class LossLayer : public Layer {
 public:
  explicit LossLayer(const LayerParameter& param);

  int exact_num_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }
  bool auto_top_blobs() const override { return true; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 1; }

  // Fixes the default loss weights for the actual number of tops, then runs
  // loss_setup().
  void layer_setup(const BlobVec& bottom, const BlobVec& top) final;

 protected:
  virtual void loss_setup(const BlobVec& bottom, const BlobVec& top) {
    (void)bottom;
    (void)top;
  }

  // Checks that bottoms 0 and 1 have the same first dimension and makes top 0
  // a scalar.
  void reshape_loss_top(const BlobVec& bottom, const BlobVec& top) const;
  // Throws if backward is asked for the gradient of bottom `index`, which is
  // `what` (e.g. "labels").
  void refuse_gradient_to(const std::vector<bool>& propagate_down, int index,
                          const char* what) const;
  // The integer class of a stored label; throws unless it is in [0, classes).
  int checked_label(float raw_label, int classes, std::size_t position) const;
  // "'label' (bottom 1)", or "bottom 1" for a layer built without names.
  std::string bottom_name(int index) const;
  // For losses with one label per sample (bottom 0 is N x ...): checks that
  // bottom 1 holds N labels, makes top 0 a scalar, and returns N (0 for an
  // empty batch). `predictions` is what bottom 0 holds ("scores").
  int reshape_per_sample_loss(const BlobVec& bottom, const BlobVec& top,
                              const char* predictions) const;
  // An empty batch (N = 0, after a Filter that selected nothing): the loss
  // of no samples is 0, written to top 0, and there is nothing to divide by
  // N or to differentiate. True when `samples` is 0; forward and backward
  // then return (docs/layers.md, "Empty batches").
  static bool empty_batch(int samples, const BlobVec& top) {
    if (samples != 0) return false;
    top[0]->mutable_cpu_data()[0] = 0.0f;
    return true;
  }
#ifdef XTRAIN_USE_CUDA
  // Device memory for cuda::LossTotals (the sums a GPU forward pass reads
  // back to the host).
  void* gpu_loss_scratch();
#endif

 private:
  bool default_loss_weights_ = false;
#ifdef XTRAIN_USE_CUDA
  Blob gpu_loss_scratch_;
#endif
};

// The normalization a loss layer uses: loss_param.normalization if set, else
// the legacy `normalize` flag (true: VALID, false: BATCH_SIZE) if set, else
// `fallback` (each Caffe layer has its own default).
LossParameter::NormalizationMode loss_normalization(const LossParameter& param,
                                                    LossParameter::NormalizationMode fallback);

// The divisor for `mode` with `outer` samples of `inner` positions each, of
// which `valid` count.
float loss_normalizer(LossParameter::NormalizationMode mode, std::size_t outer, std::size_t inner,
                      std::size_t valid);

// Whether a stored float label, truncated to int as Caffe does, equals `label`.
bool label_equals(float raw_label, int label);

}  // namespace xtrain

// The softmax a loss layer runs over its scores before the loss
// (SoftmaxWithLoss, InfogainLoss): an internal Softmax layer over bottom 0,
// its probabilities kept for backward and, where the layer declares a
// second top, shared as that top, as Caffe does.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "layers/softmax_layer.hpp"
#include "xtrain/blob.hpp"

namespace xtrain {

class LossSoftmax {
 public:
  // `loss_param` is the loss layer's own parameter (its softmax_param, if
  // any, picks the axis unless `axis_override` says otherwise).
  void setup(const LayerParameter& loss_param, const Device& device, Blob* scores,
             const int* axis_override = nullptr);
  // Reshapes for `scores` and checks that `labels` holds one label per
  // position (outer x inner), naming them in the error: `layer` is the
  // loss layer's where(), `labels_name` how it calls bottom 1.
  void reshape(const Device& device, Blob* scores, const Blob& labels, const std::string& layer,
               const std::string& labels_name);
  void forward();
  // Makes `top` (the loss layer's second top) the probabilities.
  void share_as_top(Blob* top);

  const Blob& probability() const { return probability_; }
  int axis() const { return layer_->axis(); }
  std::size_t outer_num() const { return layer_->outer_num(); }
  std::size_t inner_num() const { return layer_->inner_num(); }
  int classes() const { return classes_; }

 private:
  std::unique_ptr<SoftmaxLayer> layer_;
  Blob probability_;
  BlobVec bottom_;
  BlobVec top_;
  int classes_ = 0;
};

}  // namespace xtrain

#include "layers/loss_layer.hpp"

#include <algorithm>

#include "xtrain/error.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/loss_kernels.hpp"
#endif

namespace xtrain {
namespace {

bool in_int_range(float value) { return value > -2147483648.0f && value < 2147483648.0f; }

void set_default_loss_weights(LayerParameter* param, int tops) {
  param->clear_loss_weight();
  param->add_loss_weight(1.0f);
  for (int i = 1; i < tops; ++i) param->add_loss_weight(0.0f);
}

}  // namespace

LossLayer::LossLayer(const LayerParameter& param) : Layer(param) {
  if (param_.loss_weight_size() == 0) {
    default_loss_weights_ = true;
    set_default_loss_weights(&param_, std::max(param_.top_size(), 1));
  }
}

void LossLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  if (default_loss_weights_ && param_.loss_weight_size() != static_cast<int>(top.size())) {
    set_default_loss_weights(&param_, static_cast<int>(top.size()));
  }
  loss_setup(bottom, top);
}

std::string LossLayer::bottom_name(int index) const {
  const std::string number = "bottom " + std::to_string(index);
  if (index < param_.bottom_size()) return "'" + param_.bottom(index) + "' (" + number + ")";
  return number;
}

void LossLayer::reshape_loss_top(const BlobVec& bottom, const BlobVec& top) const {
  XTRAIN_CHECK(bottom[0]->num_axes() > 0 && bottom[1]->num_axes() > 0 &&
                   bottom[0]->shape(0) == bottom[1]->shape(0),
               where(), ": the predictions ", bottom_name(0), " of shape ",
               bottom[0]->shape_string(), " and the labels ", bottom_name(1), " of shape ",
               bottom[1]->shape_string(),
               " must have the same first (batch) dimension: one label entry per sample");
  top[0]->reshape(std::vector<int>{});
}

int LossLayer::reshape_per_sample_loss(const BlobVec& bottom, const BlobVec& top,
                                       const char* predictions) const {
  reshape_loss_top(bottom, top);
  const int num = bottom[0]->shape(0);
  XTRAIN_CHECK(bottom[1]->count() == static_cast<std::size_t>(num), where(), ": the labels ",
               bottom_name(1), " of shape ", bottom[1]->shape_string(),
               " must hold one label per sample (N x 1 x 1 x 1): ", num, " values for ",
               predictions, " of shape ", bottom[0]->shape_string());
  return num;
}

#ifdef XTRAIN_USE_CUDA
void* LossLayer::gpu_loss_scratch() {
  gpu_loss_scratch_.reshape(std::vector<int>{cuda::kLossScratchFloats});
  return gpu_loss_scratch_.mutable_gpu_data();
}
#endif

void LossLayer::refuse_gradient_to(const std::vector<bool>& propagate_down, int index,
                                   const char* what) const {
  XTRAIN_CHECK(static_cast<int>(propagate_down.size()) <= index || !propagate_down[index], where(),
               " cannot backpropagate to its ", what, " ", bottom_name(index),
               "; remove propagate_down: true for it");
}

int LossLayer::checked_label(float raw_label, int classes, std::size_t position) const {
  const bool valid = in_int_range(raw_label) && static_cast<int>(raw_label) >= 0 &&
                     static_cast<int>(raw_label) < classes;
  XTRAIN_CHECK(valid, where(), ": label ", raw_label, " at position ", position,
               " is out of range: the predictions have ", classes,
               " classes, so labels must be in [0, ", classes - 1,
               "]; check the data's labels or the num_output of the layer that produces the "
               "predictions");
  return static_cast<int>(raw_label);
}

LossParameter::NormalizationMode loss_normalization(const LossParameter& param,
                                                    LossParameter::NormalizationMode fallback) {
  if (param.has_normalization()) return param.normalization();
  if (param.has_normalize())
    return param.normalize() ? LossParameter::VALID : LossParameter::BATCH_SIZE;
  return fallback;
}

float loss_normalizer(LossParameter::NormalizationMode mode, std::size_t outer, std::size_t inner,
                      std::size_t valid) {
  float value = 1;
  switch (mode) {
    case LossParameter::FULL:
      value = static_cast<float>(outer * inner);
      break;
    case LossParameter::VALID:
      value = static_cast<float>(valid);
      break;
    case LossParameter::BATCH_SIZE:
      value = static_cast<float>(outer);
      break;
    case LossParameter::NONE:
      value = 1;
      break;
  }
  // A batch whose labels are all ignored must not divide by zero.
  return std::max(1.0f, value);
}

bool label_equals(float raw_label, int label) {
  return in_int_range(raw_label) && static_cast<int>(raw_label) == label;
}

}  // namespace xtrain

#include "layers/loss_softmax.hpp"

#include "xtrain/error.hpp"

namespace xtrain {

void LossSoftmax::setup(const LayerParameter& loss_param, const Device& device, Blob* scores,
                        const int* axis_override) {
  LayerParameter softmax_param = loss_param;
  softmax_param.set_type("Softmax");
  softmax_param.clear_loss_weight();
  softmax_param.clear_bottom();
  softmax_param.clear_top();
  if (axis_override != nullptr) softmax_param.mutable_softmax_param()->set_axis(*axis_override);
  layer_ = std::make_unique<SoftmaxLayer>(softmax_param);
  layer_->set_device(device);
  bottom_ = {scores};
  top_ = {&probability_};
  layer_->setup(bottom_, top_);
}

void LossSoftmax::reshape(const Device& device, Blob* scores, const Blob& labels,
                          const std::string& layer, const std::string& labels_name) {
  layer_->set_device(device);
  bottom_[0] = scores;
  layer_->reshape(bottom_, top_);
  classes_ = scores->shape(axis());
  const std::size_t positions = outer_num() * inner_num();
  XTRAIN_CHECK(labels.count() == positions, layer, ": the labels ", labels_name, " of shape ",
               labels.shape_string(), " must hold one label per score position: ", positions,
               " values for scores of shape ", scores->shape_string(), " with the classes on axis ",
               axis(), " (e.g. N*H*W labels for N x C x H x W scores, each in [0, C))");
}

void LossSoftmax::forward() { layer_->forward(bottom_, top_); }

void LossSoftmax::share_as_top(Blob* top) {
  top->reshape_like(probability_);
  top->share_data(probability_);
}

}  // namespace xtrain

// The layers that ship with xtrain, in one list. Each name N in
// XTRAIN_FOR_EACH_BUILTIN_LAYER stands for register_N_layer(LayerRegistry&),
// which N's .cpp defines next to its class (add_layer<NLayer>(registry,
// "Type")); register_builtin_layers() calls them all, so a static link cannot
// drop a layer the way static initialisers can. A new built-in layer is one
// entry here (docs/adding-a-layer.md).
#pragma once

namespace xtrain {

class LayerRegistry;

// clang-format off
#define XTRAIN_FOR_EACH_BUILTIN_LAYER(X) \
  /* data */ \
  X(input) \
  X(data) \
  X(annotated_data) \
  X(image_data) \
  X(window_data) \
  X(memory_data) \
  X(hdf5_data) \
  X(hdf5_output) \
  X(dummy_data) \
  /* vision */ \
  X(convolution) \
  X(deconvolution) \
  X(pooling) \
  X(spp) \
  X(lrn) \
  X(crop) \
  X(im2col) \
  /* neurons */ \
  X(relu) \
  X(prelu) \
  X(elu) \
  X(sigmoid) \
  X(tanh) \
  X(absval) \
  X(power) \
  X(exp) \
  X(log) \
  X(bnll) \
  X(threshold) \
  X(dropout) \
  X(clip) \
  X(swish) \
  X(gelu) \
  /* normalisation and arithmetic */ \
  X(batch_norm) \
  X(scale) \
  X(bias) \
  X(mvn) \
  X(eltwise) \
  /* shape and plumbing */ \
  X(inner_product) \
  X(embed) \
  /* recurrent */ \
  X(rnn) \
  X(lstm) \
  X(lstm_unit) \
  X(flatten) \
  X(reshape) \
  X(split) \
  X(concat) \
  X(slice) \
  X(tile) \
  X(silence) \
  X(reduction) \
  X(argmax) \
  X(batch_reindex) \
  X(filter) \
  X(parameter) \
  X(softmax) \
  X(accuracy) \
  /* losses */ \
  X(softmax_with_loss) \
  X(euclidean_loss) \
  X(sigmoid_cross_entropy_loss) \
  X(hinge_loss) \
  X(infogain_loss) \
  X(contrastive_loss) \
  X(multinomial_logistic_loss) \
  /* object detection (SSD) */ \
  X(prior_box) \
  X(permute) \
  X(normalize) \
  X(multibox_loss) \
  X(detection_output) \
  X(detection_evaluate) \
  /* object detection (YOLOv3) */ \
  X(upsample) \
  X(yolo_loss) \
  X(yolo_detection_output)
// clang-format on

void register_builtin_layers(LayerRegistry& registry);

#define XTRAIN_DECLARE_LAYER_REGISTRATION(name) \
  void register_##name##_layer(LayerRegistry& registry);
XTRAIN_FOR_EACH_BUILTIN_LAYER(XTRAIN_DECLARE_LAYER_REGISTRATION)
#undef XTRAIN_DECLARE_LAYER_REGISTRATION

}  // namespace xtrain

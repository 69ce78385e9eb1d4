#include "layers/builtin_layers.hpp"

#include "xtrain/layer_registry.hpp"

namespace xtrain {

// Here rather than in core's layer_registry.cpp so that core includes no
// layer (docs/architecture.md). Filled on first use, not by static
// initialisers: no initialisation-order race, and a static link keeps every
// built-in layer because any caller of global() pulls this file in.
LayerRegistry& LayerRegistry::global() {
  static LayerRegistry* registry = [] {
    auto* created = new LayerRegistry();
    register_builtin_layers(*created);
    return created;
  }();
  return *registry;
}

void register_builtin_layers(LayerRegistry& registry) {
  register_input_layer(registry);
  register_data_layer(registry);
  register_image_data_layer(registry);
  register_memory_data_layer(registry);
  register_hdf5_data_layer(registry);
  register_convolution_layer(registry);
  register_pooling_layer(registry);
  register_inner_product_layer(registry);
  register_relu_layer(registry);
  register_sigmoid_layer(registry);
  register_tanh_layer(registry);
  register_dropout_layer(registry);
  register_softmax_layer(registry);
  register_softmax_with_loss_layer(registry);
  register_accuracy_layer(registry);
  register_flatten_layer(registry);
  register_split_layer(registry);
  register_absval_layer(registry);
  register_power_layer(registry);
  register_exp_layer(registry);
  register_log_layer(registry);
  register_bnll_layer(registry);
  register_threshold_layer(registry);
  register_elu_layer(registry);
  register_prelu_layer(registry);
  register_silence_layer(registry);
  register_reduction_layer(registry);
  register_argmax_layer(registry);
  register_embed_layer(registry);
  register_mvn_layer(registry);
  register_dummy_data_layer(registry);
  register_reshape_layer(registry);
  register_tile_layer(registry);
  register_crop_layer(registry);
  register_lrn_layer(registry);
  register_batch_norm_layer(registry);
  register_scale_layer(registry);
  register_bias_layer(registry);
  register_eltwise_layer(registry);
  register_concat_layer(registry);
  register_slice_layer(registry);
  register_deconvolution_layer(registry);
  register_spp_layer(registry);
  register_euclidean_loss_layer(registry);
  register_sigmoid_cross_entropy_loss_layer(registry);
  register_hinge_loss_layer(registry);
  register_infogain_loss_layer(registry);
  register_contrastive_loss_layer(registry);
  register_multinomial_logistic_loss_layer(registry);
}

}  // namespace xtrain

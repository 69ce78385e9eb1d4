// The layers that ship with xtrain. Each layer's .cpp defines its register_*
// function next to the class; register_builtin_layers() calls them all, so a
// static link cannot drop a layer the way static initialisers can.
#pragma once

namespace xtrain {

class LayerRegistry;

void register_builtin_layers(LayerRegistry& registry);

void register_input_layer(LayerRegistry& registry);
void register_data_layer(LayerRegistry& registry);
void register_image_data_layer(LayerRegistry& registry);
void register_memory_data_layer(LayerRegistry& registry);
void register_hdf5_data_layer(LayerRegistry& registry);
void register_convolution_layer(LayerRegistry& registry);
void register_pooling_layer(LayerRegistry& registry);
void register_inner_product_layer(LayerRegistry& registry);
void register_relu_layer(LayerRegistry& registry);
void register_sigmoid_layer(LayerRegistry& registry);
void register_tanh_layer(LayerRegistry& registry);
void register_dropout_layer(LayerRegistry& registry);
void register_softmax_layer(LayerRegistry& registry);
void register_softmax_with_loss_layer(LayerRegistry& registry);
void register_accuracy_layer(LayerRegistry& registry);
void register_flatten_layer(LayerRegistry& registry);
void register_split_layer(LayerRegistry& registry);
void register_absval_layer(LayerRegistry& registry);
void register_power_layer(LayerRegistry& registry);
void register_exp_layer(LayerRegistry& registry);
void register_log_layer(LayerRegistry& registry);
void register_bnll_layer(LayerRegistry& registry);
void register_threshold_layer(LayerRegistry& registry);
void register_elu_layer(LayerRegistry& registry);
void register_prelu_layer(LayerRegistry& registry);
void register_silence_layer(LayerRegistry& registry);
void register_reduction_layer(LayerRegistry& registry);
void register_argmax_layer(LayerRegistry& registry);
void register_embed_layer(LayerRegistry& registry);
void register_mvn_layer(LayerRegistry& registry);
void register_dummy_data_layer(LayerRegistry& registry);
void register_reshape_layer(LayerRegistry& registry);
void register_tile_layer(LayerRegistry& registry);
void register_crop_layer(LayerRegistry& registry);
void register_lrn_layer(LayerRegistry& registry);
void register_batch_norm_layer(LayerRegistry& registry);
void register_scale_layer(LayerRegistry& registry);
void register_bias_layer(LayerRegistry& registry);
void register_eltwise_layer(LayerRegistry& registry);
void register_concat_layer(LayerRegistry& registry);
void register_slice_layer(LayerRegistry& registry);
void register_deconvolution_layer(LayerRegistry& registry);
void register_spp_layer(LayerRegistry& registry);
void register_euclidean_loss_layer(LayerRegistry& registry);
void register_sigmoid_cross_entropy_loss_layer(LayerRegistry& registry);
void register_hinge_loss_layer(LayerRegistry& registry);
void register_infogain_loss_layer(LayerRegistry& registry);
void register_contrastive_loss_layer(LayerRegistry& registry);
void register_multinomial_logistic_loss_layer(LayerRegistry& registry);

}  // namespace xtrain

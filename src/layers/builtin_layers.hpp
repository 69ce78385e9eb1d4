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

}  // namespace xtrain

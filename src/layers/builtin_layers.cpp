#include "layers/builtin_layers.hpp"

namespace xtrain {

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
}

}  // namespace xtrain

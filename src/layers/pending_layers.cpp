// TEMPORARY during the first build-out: weak placeholders so the library
// links while layers are being written in parallel. Each layer's own
// register_* definition overrides its placeholder. Deleted once all exist.
#include "layers/builtin_layers.hpp"

namespace xtrain {
#define XTRAIN_PENDING(fn) __attribute__((weak)) void fn(LayerRegistry&) {}
XTRAIN_PENDING(register_input_layer)
XTRAIN_PENDING(register_data_layer)
XTRAIN_PENDING(register_convolution_layer)
XTRAIN_PENDING(register_pooling_layer)
XTRAIN_PENDING(register_inner_product_layer)
XTRAIN_PENDING(register_relu_layer)
XTRAIN_PENDING(register_sigmoid_layer)
XTRAIN_PENDING(register_tanh_layer)
XTRAIN_PENDING(register_dropout_layer)
XTRAIN_PENDING(register_softmax_layer)
XTRAIN_PENDING(register_softmax_with_loss_layer)
XTRAIN_PENDING(register_accuracy_layer)
XTRAIN_PENDING(register_flatten_layer)
XTRAIN_PENDING(register_split_layer)
}  // namespace xtrain

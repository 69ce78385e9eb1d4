// TEMPORARY while the image-pipeline layers are written in parallel: weak
// placeholders so the library links; each layer's own register_* definition
// overrides its placeholder. Deleted once all exist.
#include "layers/builtin_layers.hpp"

namespace xtrain {
#define XTRAIN_PENDING(fn) __attribute__((weak)) void fn(LayerRegistry&) {}
XTRAIN_PENDING(register_image_data_layer)
XTRAIN_PENDING(register_memory_data_layer)
XTRAIN_PENDING(register_hdf5_data_layer)
}  // namespace xtrain

// TEMPORARY while the image-pipeline and model-zoo layers are written in parallel: weak
// placeholders so the library links; each layer's own register_* definition
// overrides its placeholder. Deleted once all exist.
#include "layers/builtin_layers.hpp"

namespace xtrain {
#define XTRAIN_PENDING(fn) __attribute__((weak)) void fn(LayerRegistry&) {}
XTRAIN_PENDING(register_image_data_layer)
XTRAIN_PENDING(register_memory_data_layer)
XTRAIN_PENDING(register_hdf5_data_layer)
XTRAIN_PENDING(register_absval_layer)
XTRAIN_PENDING(register_power_layer)
XTRAIN_PENDING(register_exp_layer)
XTRAIN_PENDING(register_log_layer)
XTRAIN_PENDING(register_bnll_layer)
XTRAIN_PENDING(register_threshold_layer)
XTRAIN_PENDING(register_elu_layer)
XTRAIN_PENDING(register_prelu_layer)
XTRAIN_PENDING(register_silence_layer)
XTRAIN_PENDING(register_reduction_layer)
XTRAIN_PENDING(register_argmax_layer)
XTRAIN_PENDING(register_embed_layer)
XTRAIN_PENDING(register_mvn_layer)
XTRAIN_PENDING(register_dummy_data_layer)
XTRAIN_PENDING(register_reshape_layer)
XTRAIN_PENDING(register_tile_layer)
XTRAIN_PENDING(register_crop_layer)
XTRAIN_PENDING(register_lrn_layer)
XTRAIN_PENDING(register_batch_norm_layer)
XTRAIN_PENDING(register_scale_layer)
XTRAIN_PENDING(register_bias_layer)
XTRAIN_PENDING(register_eltwise_layer)
XTRAIN_PENDING(register_concat_layer)
XTRAIN_PENDING(register_slice_layer)
XTRAIN_PENDING(register_deconvolution_layer)
XTRAIN_PENDING(register_spp_layer)
XTRAIN_PENDING(register_euclidean_loss_layer)
XTRAIN_PENDING(register_sigmoid_cross_entropy_loss_layer)
XTRAIN_PENDING(register_hinge_loss_layer)
XTRAIN_PENDING(register_infogain_loss_layer)
XTRAIN_PENDING(register_contrastive_loss_layer)
XTRAIN_PENDING(register_multinomial_logistic_loss_layer)
}  // namespace xtrain

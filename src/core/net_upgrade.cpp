// The net upgrade pipeline, and its small steps: data-layer transformation
// fields, input fields and BatchNorm param specs. The layer-format steps
// live in net_upgrade_v0.cpp and net_upgrade_v1.cpp.
#include "core/net_upgrade.hpp"

#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

// DataParameter, ImageDataParameter and WindowDataParameter all kept their
// own copies of scale, mean_file, crop_size and mirror.
template <typename DataLayerParameter>
bool has_legacy_transform(const DataLayerParameter& param) {
  return param.has_scale() || param.has_mean_file() || param.has_crop_size() || param.has_mirror();
}

template <typename DataLayerParameter>
void move_legacy_transform(DataLayerParameter* param, TransformationParameter* transform) {
  if (param->has_scale()) transform->set_scale(param->scale());
  if (param->has_mean_file()) transform->set_mean_file(param->mean_file());
  if (param->has_crop_size()) transform->set_crop_size(param->crop_size());
  if (param->has_mirror()) transform->set_mirror(param->mirror());
  param->clear_scale();
  param->clear_mean_file();
  param->clear_crop_size();
  param->clear_mirror();
}

// Logs the step and records its description.
void announce(const std::string& source, const std::string& what, std::vector<std::string>* steps) {
  XLOG(WARNING) << "'" << source << "' " << what
                << "; upgrading (write the new format with `xtrain upgrade`)";
  if (steps) steps->push_back(what);
}

}  // namespace

bool net_needs_data_upgrade(const NetParameter& param) {
  for (const V1LayerParameter& layer : param.layers()) {
    switch (layer.type()) {
      case V1LayerParameter::DATA:
        if (has_legacy_transform(layer.data_param())) return true;
        break;
      case V1LayerParameter::IMAGE_DATA:
        if (has_legacy_transform(layer.image_data_param())) return true;
        break;
      case V1LayerParameter::WINDOW_DATA:
        if (has_legacy_transform(layer.window_data_param())) return true;
        break;
      default:
        break;
    }
  }
  return false;
}

void upgrade_net_data_transformation(NetParameter* param) {
  // Like Caffe, every data layer of these kinds ends up with (possibly
  // empty) *_data_param and transform_param messages.
  for (V1LayerParameter& layer : *param->mutable_layers()) {
    switch (layer.type()) {
      case V1LayerParameter::DATA:
        move_legacy_transform(layer.mutable_data_param(), layer.mutable_transform_param());
        break;
      case V1LayerParameter::IMAGE_DATA:
        move_legacy_transform(layer.mutable_image_data_param(), layer.mutable_transform_param());
        break;
      case V1LayerParameter::WINDOW_DATA:
        move_legacy_transform(layer.mutable_window_data_param(), layer.mutable_transform_param());
        break;
      default:
        break;
    }
  }
}

bool net_needs_input_upgrade(const NetParameter& param) { return param.input_size() > 0; }

void upgrade_net_input(NetParameter* param) {
  if (param->input_shape_size() > 0 || param->input_dim_size() > 0) {
    upgrade_net_inputs(param);
    return;
  }
  // Bare input names, as old Caffe wrote into .caffemodel files: the
  // weights do not need them.
  param->clear_input();
}

bool net_needs_batch_norm_upgrade(const NetParameter& param) {
  for (const LayerParameter& layer : param.layer()) {
    if (layer.type() == "BatchNorm" && layer.param_size() == 3) return true;
  }
  return false;
}

void upgrade_net_batch_norm(NetParameter* param) {
  for (LayerParameter& layer : *param->mutable_layer()) {
    if (layer.type() != "BatchNorm" || layer.param_size() != 3) continue;
    for (ParamSpec& spec : *layer.mutable_param()) {
      spec.set_lr_mult(0);
      spec.set_decay_mult(0);
    }
  }
}

void check_one_layer_format(const std::string& source, const NetParameter& param) {
  XTRAIN_CHECK(param.layer_size() == 0 || param.layers_size() == 0, "'", source,
               "' has both `layer` (current format, ", param.layer_size(),
               " layers) and `layers` (old format, ", param.layers_size(),
               " layers); write all layers in one format (`xtrain upgrade` converts an old file)");
}

bool net_needs_upgrade(const NetParameter& param) {
  return net_needs_v0_to_v1_upgrade(param) || net_needs_data_upgrade(param) ||
         net_needs_v1_to_v2_upgrade(param) || net_needs_input_upgrade(param) ||
         net_needs_batch_norm_upgrade(param);
}

bool upgrade_net_as_needed(const std::string& source, NetParameter* param,
                           std::vector<std::string>* steps) {
  check_one_layer_format(source, *param);
  bool upgraded = false;
  if (net_needs_v0_to_v1_upgrade(*param)) {
    announce(source, "uses the deprecated V0 layer format (`layers { layer { type: \"conv\" } }`)",
             steps);
    upgrade_v0_net(source, param, steps);
    upgraded = true;
  }
  if (net_needs_data_upgrade(*param)) {
    announce(source,
             "sets scale/mean_file/crop_size/mirror in deprecated data-layer fields instead of "
             "transform_param",
             steps);
    upgrade_net_data_transformation(param);
    upgraded = true;
  }
  if (net_needs_v1_to_v2_upgrade(*param)) {
    announce(source, "uses the deprecated V1 layer format (`layers { type: CONVOLUTION }`)", steps);
    upgrade_v1_net(source, param);
    upgraded = true;
  }
  if (net_needs_input_upgrade(*param)) {
    announce(source, "declares its inputs with the deprecated input/input_shape/input_dim fields",
             steps);
    upgrade_net_input(param);
    upgraded = true;
  }
  if (net_needs_batch_norm_upgrade(*param)) {
    announce(source,
             "gives BatchNorm layers the 3 deprecated param specs (their statistics are not "
             "learned: lr_mult and decay_mult become 0)",
             steps);
    upgrade_net_batch_norm(param);
    upgraded = true;
  }
  return upgraded;
}

}  // namespace xtrain

#include "xtrain/error.hpp"
#include "xtrain/net_upgrade.hpp"

namespace xtrain {

bool upgrade_net_inputs(NetParameter* param) {
  if (param->input_size() == 0) return false;
  const int inputs = param->input_size();
  const bool by_shape = param->input_shape_size() > 0;
  XTRAIN_CHECK(!by_shape || param->input_shape_size() == inputs ||
                   param->input_shape_size() == 1,
               "net '", param->name(), "' declares ", inputs, " inputs but ",
               param->input_shape_size(), " input_shape entries");
  XTRAIN_CHECK(by_shape || param->input_dim_size() == 4 * inputs, "net '", param->name(),
               "' declares ", inputs, " inputs and needs 4 input_dim values for each (got ",
               param->input_dim_size(), ")");

  LayerParameter input_layer;
  input_layer.set_name("input");
  input_layer.set_type("Input");
  for (int i = 0; i < inputs; ++i) {
    input_layer.add_top(param->input(i));
    BlobShape* shape = input_layer.mutable_input_param()->add_shape();
    if (by_shape) {
      *shape = param->input_shape(param->input_shape_size() == 1 ? 0 : i);
    } else {
      for (int d = 0; d < 4; ++d) shape->add_dim(param->input_dim(4 * i + d));
    }
  }
  NetParameter upgraded(*param);
  upgraded.clear_input();
  upgraded.clear_input_shape();
  upgraded.clear_input_dim();
  upgraded.clear_layer();
  *upgraded.add_layer() = input_layer;
  for (const LayerParameter& layer : param->layer()) *upgraded.add_layer() = layer;
  *param = upgraded;
  return true;
}

}  // namespace xtrain

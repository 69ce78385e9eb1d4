// Flatten: collapses the axes [flatten_param.axis, flatten_param.end_axis]
// (defaults 1 and -1) into one, e.g. N x C x H x W -> N x (C*H*W). The top is
// a view: it shares the bottom's data and diff, so forward and backward copy
// nothing.
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/view_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class FlattenLayer : public ViewLayer {
 public:
  using ViewLayer::ViewLayer;
  const char* type() const override { return "Flatten"; }

 protected:
  std::vector<int> view_shape(const Blob& input) const override {
    const FlattenParameter& flatten = param_.flatten_param();
    const int start_axis = input.canonical_axis_index(flatten.axis());
    const int end_axis = input.canonical_axis_index(flatten.end_axis());
    XTRAIN_CHECK(start_axis <= end_axis, where(), ": flatten_param.axis (", flatten.axis(),
                 ") comes after end_axis (", flatten.end_axis(), ") for a bottom of shape ",
                 input.shape_string());
    std::vector<int> shape(input.shape().begin(), input.shape().begin() + start_axis);
    shape.push_back(static_cast<int>(input.count(start_axis, end_axis + 1)));
    shape.insert(shape.end(), input.shape().begin() + end_axis + 1, input.shape().end());
    return shape;
  }
};

}  // namespace

void register_flatten_layer(LayerRegistry& registry) {
  add_layer<FlattenLayer>(registry, "Flatten");
}

}  // namespace xtrain

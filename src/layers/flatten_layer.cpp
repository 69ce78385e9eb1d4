// Flatten: collapses the axes [flatten_param.axis, flatten_param.end_axis]
// (defaults 1 and -1) into one, e.g. N x C x H x W -> N x (C*H*W). The top is
// a view: it shares the bottom's data and diff, so forward and backward copy
// nothing.
#include <vector>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class FlattenLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Flatten"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    const Blob& input = *bottom[0];
    const FlattenParameter& flatten = param_.flatten_param();
    const int start_axis = input.canonical_axis_index(flatten.axis());
    const int end_axis = input.canonical_axis_index(flatten.end_axis());
    XTRAIN_CHECK(start_axis <= end_axis, where(), ": flatten_param.axis (", flatten.axis(),
                 ") comes after end_axis (", flatten.end_axis(), ") for a bottom of shape ",
                 input.shape_string());
    std::vector<int> shape(input.shape().begin(), input.shape().begin() + start_axis);
    shape.push_back(static_cast<int>(input.count(start_axis, end_axis + 1)));
    shape.insert(shape.end(), input.shape().begin() + end_axis + 1, input.shape().end());
    top[0]->reshape(shape);
    top[0]->share_data(input);
    top[0]->share_diff(input);
  }

 protected:
  void forward_cpu(const BlobVec&, const BlobVec&) override {}
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void forward_gpu(const BlobVec&, const BlobVec&) override {}
  void backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
};

}  // namespace

void register_flatten_layer(LayerRegistry& registry) {
  add_layer<FlattenLayer>(registry, "Flatten");
}

}  // namespace xtrain

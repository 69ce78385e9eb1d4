// Input: the net's entry points. Its tops are shaped once from
// input_param.shape (one shape for every top, or one per top) and are then
// filled by the caller; forward and backward do nothing. A later reshape by
// hand is kept, since reshape() leaves the tops alone.
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class InputLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Input"; }
  int exact_num_bottom_blobs() const override { return 0; }
  int min_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    (void)bottom;
    const InputParameter& input = param_.input_param();
    const int shapes = input.shape_size();
    const int tops = static_cast<int>(top.size());
    XTRAIN_CHECK(shapes == 0 || shapes == 1 || shapes == tops, where(), " has ", shapes,
                 " input_param.shape entries for ", tops,
                 " tops; give one shape for all tops, one per top, or none");
    for (int i = 0; i < tops && shapes > 0; ++i) {
      top[i]->reshape(input.shape(shapes == 1 ? 0 : i));
    }
  }

  void reshape(const BlobVec&, const BlobVec&) override {}

 protected:
  void forward_cpu(const BlobVec&, const BlobVec&) override {}
  void backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
  void forward_gpu(const BlobVec&, const BlobVec&) override {}
  void backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}
};

}  // namespace

void register_input_layer(LayerRegistry& registry) { add_layer<InputLayer>(registry, "Input"); }

}  // namespace xtrain

// Concat (Caffe type "Concat"): joins the bottoms along one axis
// (concat_param.axis, default 1 = channels; or the legacy concat_dim, which
// may not be negative). The bottoms must agree on every other axis. Viewing
// each bottom as (outer, its size on the axis, inner), top row block o is the
// bottoms' blocks o one after another. Backward cuts dtop back into the
// bottoms' diffs. A single bottom is passed through as a view (no copy).
#include <algorithm>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class ConcatLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Concat"; }
  int min_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const ConcatParameter& concat = param_.concat_param();
    XTRAIN_CHECK(!(concat.has_axis() && concat.has_concat_dim()), where(),
                 ": give concat_param.axis or the legacy concat_dim, not both");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& first = *bottom[0];
    const ConcatParameter& concat = param_.concat_param();
    if (concat.has_concat_dim()) {
      XTRAIN_CHECK(static_cast<int>(concat.concat_dim()) < first.num_axes(), where(),
                   ": concat_dim ", concat.concat_dim(), " is out of range for bottom 0 of shape ",
                   first.shape_string());
      axis_ = static_cast<int>(concat.concat_dim());
    } else {
      XTRAIN_CHECK(concat.axis() >= -first.num_axes() && concat.axis() < first.num_axes(), where(),
                   ": concat_param.axis ", concat.axis(), " is out of range for bottom 0 of shape ",
                   first.shape_string());
      axis_ = first.canonical_axis_index(concat.axis());
    }
    std::vector<int> top_shape = first.shape();
    for (std::size_t i = 1; i < bottom.size(); ++i) {
      const Blob& input = *bottom[i];
      bool agrees = input.num_axes() == first.num_axes();
      for (int a = 0; agrees && a < first.num_axes(); ++a) {
        agrees = a == axis_ || input.shape(a) == first.shape(a);
      }
      XTRAIN_CHECK(agrees, where(), ": the bottoms must have the same shape except on axis ", axis_,
                   ", but bottom 0 is ", first.shape_string(), " and bottom ", i, " is ",
                   input.shape_string());
      top_shape[axis_] += input.shape(axis_);
    }
    XTRAIN_CHECK(bottom.size() == 1 || top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottoms");
    top[0]->reshape(top_shape);
    outer_ = first.count(0, axis_);
    inner_ = first.count(axis_ + 1);
    if (bottom.size() == 1) {
      top[0]->share_data(first);
      top[0]->share_diff(first);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (bottom.size() == 1) return;
    float* output = top[0]->mutable_cpu_data();
    const std::size_t top_block = top[0]->shape(axis_) * inner_;
    std::size_t offset = 0;
    for (const Blob* input : bottom) {
      const std::size_t block = input->shape(axis_) * inner_;
      const float* data = input->cpu_data();
      for (std::size_t o = 0; o < outer_; ++o) {
        std::copy(data + o * block, data + (o + 1) * block, output + o * top_block + offset);
      }
      offset += block;
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (bottom.size() == 1) return;
    const float* output_diff = top[0]->cpu_diff();
    const std::size_t top_block = top[0]->shape(axis_) * inner_;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < bottom.size(); ++i) {
      const std::size_t block = bottom[i]->shape(axis_) * inner_;
      if (propagate_down[i]) {
        float* diff = bottom[i]->mutable_cpu_diff();
        for (std::size_t o = 0; o < outer_; ++o) {
          const float* source = output_diff + o * top_block + offset;
          std::copy(source, source + block, diff + o * block);
        }
      }
      offset += block;
    }
  }

 private:
  int axis_ = 1;
  std::size_t outer_ = 1;
  std::size_t inner_ = 1;
};

}  // namespace

void register_concat_layer(LayerRegistry& registry) { add_layer<ConcatLayer>(registry, "Concat"); }

}  // namespace xtrain

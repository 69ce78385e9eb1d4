// Permute (SSD; permute_param { order: ... }): reorders the axes, as
// numpy.transpose does. The top's axis i is the bottom's axis order[i]; axes
// that `order` leaves out follow in their own order, so order: 0 order: 2
// order: 3 order: 1 turns N x C x H x W into N x H x W x C, the layout SSD
// flattens its per-cell predictions in.
//   top[c_0, ..., c_n-1] = bottom at the coordinates that put c_i on axis order[i]
//   dE/dbottom is dE/dtop moved back the same way (a permutation: no sums).
#include <cstdint>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/permute_geometry.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/detection_kernels.hpp"
#endif

namespace xtrain {
namespace {

class PermuteLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Permute"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec&) override {
    const int axes = bottom[0]->num_axes();
    std::vector<bool> used(axes, false);
    for (const std::uint32_t axis : param_.permute_param().order()) {
      XTRAIN_CHECK(static_cast<int>(axis) < axes, where(), ": order ", axis,
                   " is not an axis of the bottom ", bottom[0]->shape_string(), " (", axes,
                   " axes, numbered from 0)");
      XTRAIN_CHECK(!used[axis], where(), ": order names axis ", axis,
                   " twice; name each axis at most once");
      used[axis] = true;
      order_.push_back(static_cast<int>(axis));
    }
    for (int axis = 0; axis < axes; ++axis) {
      if (!used[axis]) order_.push_back(axis);
    }
    XTRAIN_CHECK(axes <= PermuteGeometry::kMaxAxes, where(), ": the bottom has ", axes,
                 " axes; Permute handles at most ", PermuteGeometry::kMaxAxes);
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const int axes = static_cast<int>(order_.size());
    XTRAIN_CHECK(bottom[0]->num_axes() == axes, where(), ": the bottom ", bottom[0]->shape_string(),
                 " has ", bottom[0]->num_axes(), " axes, but the layer was set up for ", axes);
    std::vector<int> shape(axes);
    for (int i = 0; i < axes; ++i) shape[i] = bottom[0]->shape(order_[i]);
    top[0]->reshape(shape);
    geometry_.axes = axes;
    std::size_t bottom_stride = 1;
    std::size_t top_stride = 1;
    for (int i = axes - 1; i >= 0; --i) {
      geometry_.order[i] = order_[i];
      geometry_.bottom_strides[i] = bottom_stride;
      geometry_.top_strides[i] = top_stride;
      bottom_stride *= static_cast<std::size_t>(bottom[0]->shape(i));
      top_stride *= static_cast<std::size_t>(shape[i]);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for (std::size_t j = 0; j < top[0]->count(); ++j) y[j] = x[geometry_.bottom_index(j)];
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    for (std::size_t j = 0; j < top[0]->count(); ++j) dx[geometry_.bottom_index(j)] = dy[j];
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::permute_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), top[0]->count(),
                          geometry_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::permute_backward(top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(), top[0]->count(),
                           geometry_);
  }
#endif

 private:
  std::vector<int> order_;
  PermuteGeometry geometry_;
};

}  // namespace

void register_permute_layer(LayerRegistry& registry) {
  add_layer<PermuteLayer>(registry, "Permute");
}

}  // namespace xtrain

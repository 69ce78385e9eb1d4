// BatchReindex: bottom 0 is x (N, ...), bottom 1 holds K indices into x's
// first axis (one axis, (K)); the top is (K, ...), item k a copy of item
// idx[k]:
//   y[k, j] = x[idx[k], j]
//   dE/dx[n, j] = sum over k with idx[k] = n of dE/dy[k, j]   (k in order)
// An item picked twice gets both gradients, one picked never gets 0. As in
// Caffe, an index is a stored float truncated to an integer, checked to lie
// in [0, N) (Caffe: "Index specified for reindex layer was negative / greater
// than batch size"); the indices get no gradient, and asking for one is an
// error.
//
// The GPU runs Embed's row gather and its segmented row sums
// (layers/row_segments.hpp): x plays Embed's weight table, the indices its
// bottom, so both devices add each item's gradients in the same order.
#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/copy_kernels.hpp"
#include "layers/row_gradient.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class BatchReindexLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "BatchReindex"; }
  int exact_num_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    const Blob& indices = *bottom[1];
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    XTRAIN_CHECK(input.num_axes() >= 1, where(), ": bottom 0 needs at least one axis (the items)");
    XTRAIN_CHECK(indices.num_axes() == 1, where(),
                 ": bottom 1 (the indices) must have one axis, (K),"
                 " but has shape ",
                 indices.shape_string(), "; flatten or reshape it");
    std::vector<int> shape = input.shape();
    shape[0] = indices.shape(0);
    top[0]->reshape(shape);
    items_ = input.shape(0);
    item_size_ = input.count(1);
    XTRAIN_CHECK(item_size_ <= static_cast<std::size_t>(std::numeric_limits<int>::max()), where(),
                 ": items of ", item_size_, " values are too large");
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* indices = bottom[1]->cpu_data();
    check_indices(*bottom[1], indices);
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    const std::size_t picked = bottom[1]->count();
    for (std::size_t k = 0; k < picked; ++k) {
      const float* source = x + row(indices[k]) * item_size_;
      std::copy(source, source + item_size_, y + k * item_size_);
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_index_gradient(propagate_down);
    if (!propagate_down[0]) return;
    const float* indices = bottom[1]->cpu_data();
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    std::fill(dx, dx + bottom[0]->count(), 0.0f);
    const ops::Add add;  // what the GPU's segmented sums apply, in the same order
    for (std::size_t k = 0; k < bottom[1]->count(); ++k) {
      float* target = dx + row(indices[k]) * item_size_;
      const float* source = dy + k * item_size_;
      for (std::size_t j = 0; j < item_size_; ++j) target[j] = add(target[j], source[j]);
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    check_indices(*bottom[1], bottom[1]->cpu_data());  // K values, read on the host as Caffe does
    cuda::embed_forward(bottom[1]->gpu_data(), bottom[0]->gpu_data(), top[0]->mutable_gpu_data(),
                        bottom[1]->count(), static_cast<int>(item_size_));
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_index_gradient(propagate_down);
    if (!propagate_down[0]) return;
    float* dx = bottom[0]->mutable_gpu_diff();
    math::gpu::set(bottom[0]->count(), 0.0f, dx);
    const float* indices = bottom[1]->cpu_data();  // checked by forward
    gradient_.add(
        bottom[1]->count(), [indices](std::size_t k) { return row(indices[k]); }, item_size_,
        top[0]->gpu_diff(), dx);
  }

  DeviceRowGradient gradient_;
#endif

 private:
  static std::size_t row(float index) { return static_cast<std::size_t>(index); }

  void check_indices(const Blob& blob, const float* indices) const {
    for (std::size_t k = 0; k < blob.count(); ++k) {
      XTRAIN_CHECK(indices[k] >= 0 && indices[k]<static_cast<float>(items_), where(), ": index ", k,
                                                 " of bottom 1 ('", param_.bottom_size()> 1
                       ? param_.bottom(1)
                       : std::string("?"),
                   "') is ", indices[k], ", outside the ", items_,
                   " items of bottom 0; indices must lie in [0, ", items_, ")");
    }
  }

  void refuse_index_gradient(const std::vector<bool>& propagate_down) const {
    XTRAIN_CHECK(!propagate_down[1], where(), ": its bottom 1 ('",
                 param_.bottom_size() > 1 ? param_.bottom(1) : std::string("?"),
                 "') holds indices, which have no gradient; add propagate_down: false for it");
  }

  int items_ = 0;              // N
  std::size_t item_size_ = 0;  // values per item
};

}  // namespace

void register_batch_reindex_layer(LayerRegistry& registry) {
  add_layer<BatchReindexLayer>(registry, "BatchReindex");
}

}  // namespace xtrain

// Filter: bottoms x_0 ... x_{B-2} and a selector s (the last bottom), all
// with the same first axis N; s is (N) or (N, 1, ...). The tops are the
// items whose selector is non-zero, in order: with k_0 < k_1 < ... the
// selected items,
//   top_t[i, ...] = x_t[k_i, ...]            top_t shape (count, x_t's other axes)
//   dE/dx_t[k_i, ...] = dE/dtop_t[i, ...],   0 for the items not selected
// The selector gets no gradient: asking for one is an error (Caffe aborts).
// The tops are reshaped from s on every forward (the net's sizes follow);
// Caffe's quirk kept: at setup, before any forward, the tops have all N items,
// so that the layers after it can be set up.
//
// The GPU runs Embed's row gather (cuda/copy_kernels.hpp) with the selected
// items as the indices, and backward the segmented row sums of
// layers/row_segments.hpp (here one position per row: a parallel scatter).
#include <algorithm>
#include <string>
#include <vector>

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

class FilterLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Filter"; }
  int min_bottom_blobs() const override { return 2; }
  int min_top_blobs() const override { return 1; }
  bool allow_force_backward(int bottom_index) const override {
    return bottom_index + 1 < param_.bottom_size();
  }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(
        top.size() + 1 == bottom.size(), where(), " has ", bottom.size(), " bottoms and ",
        top.size(),
        " tops; it needs one top per bottom filtered, and the selector as the last bottom");
    for (std::size_t t = 0; t < top.size(); ++t) {
      for (const Blob* input : bottom) {
        XTRAIN_CHECK(top[t] != input, where(),
                     " cannot run in place; give each top a name different from the bottoms");
      }
    }
    first_reshape_ = true;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& selector = *bottom.back();
    XTRAIN_CHECK(selector.num_axes() >= 1, where(), ": the selector (last bottom) needs an axis");
    for (int axis = 1; axis < selector.num_axes(); ++axis) {
      XTRAIN_CHECK(selector.shape(axis) == 1, where(), ": the selector (last bottom, '",
                   param_.bottom_size() > 0 ? param_.bottom(param_.bottom_size() - 1) : "?",
                   "') has shape ", selector.shape_string(),
                   "; it must be (N) or (N, 1, ...): one value per item");
    }
    const int items = selector.shape(0);
    for (std::size_t t = 0; t + 1 < bottom.size(); ++t) {
      XTRAIN_CHECK(bottom[t]->num_axes() >= 1 && bottom[t]->shape(0) == items, where(), ": bottom ",
                   t, " has shape ", bottom[t]->shape_string(), " but the selector has ", items,
                   " items; every bottom needs the selector's first axis");
    }
    selected_.clear();
    const float* s = selector.cpu_data();
    for (int n = 0; n < items; ++n) {
      if (s[n] != 0.0f) selected_.push_back(n);
    }
    const int count = first_reshape_ ? items : static_cast<int>(selected_.size());
    first_reshape_ = false;
    for (std::size_t t = 0; t < top.size(); ++t) {
      std::vector<int> shape = bottom[t]->shape();
      shape[0] = count;
      top[t]->reshape(shape);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    for (std::size_t t = 0; t < top.size(); ++t) {
      const std::size_t size = bottom[t]->count(1);
      const float* x = bottom[t]->cpu_data();
      float* y = top[t]->mutable_cpu_data();
      for (std::size_t i = 0; i < selected_.size(); ++i) {
        std::copy_n(x + selected_[i] * size, size, y + i * size);
      }
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_selector_gradient(propagate_down);
    for (std::size_t t = 0; t < top.size(); ++t) {
      if (!propagate_down[t]) continue;
      const std::size_t size = bottom[t]->count(1);
      const float* dy = top[t]->cpu_diff();
      float* dx = bottom[t]->mutable_cpu_diff();
      std::fill_n(dx, bottom[t]->count(), 0.0f);
      for (std::size_t i = 0; i < selected_.size(); ++i) {
        std::copy_n(dy + i * size, size, dx + selected_[i] * size);
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* rows = selected_rows_gpu();
    for (std::size_t t = 0; t < top.size(); ++t) {
      cuda::embed_forward(rows, bottom[t]->gpu_data(), top[t]->mutable_gpu_data(), selected_.size(),
                          item_size(*bottom[t]));
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    refuse_selector_gradient(propagate_down);
    for (std::size_t t = 0; t < top.size(); ++t) {
      if (!propagate_down[t]) continue;
      float* dx = bottom[t]->mutable_gpu_diff();
      math::gpu::set(bottom[t]->count(), 0.0f, dx);
      gradient_.add(
          selected_.size(), [this](std::size_t i) { return selected_[i]; },
          bottom[t]->count(1), top[t]->gpu_diff(), dx);
    }
  }

  // The selected items as floats on the device (Embed's index format).
  const float* selected_rows_gpu() {
    rows_.reshape(std::vector<int>{static_cast<int>(selected_.size())});
    std::copy(selected_.begin(), selected_.end(), rows_.mutable_cpu_data());
    return rows_.gpu_data();
  }

  int item_size(const Blob& blob) const {
    XTRAIN_CHECK(blob.count(1) <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                 where(), ": items of ", blob.count(1), " values are too large for the GPU path");
    return static_cast<int>(blob.count(1));
  }

  Blob rows_;
  DeviceRowGradient gradient_;
#endif

 private:
  void refuse_selector_gradient(const std::vector<bool>& propagate_down) const {
    XTRAIN_CHECK(!propagate_down.back(), where(), ": its last bottom ('",
                 param_.bottom_size() > 0 ? param_.bottom(param_.bottom_size() - 1) : "?",
                 "') is the selector, which has no gradient; add propagate_down: false for it");
  }

  std::vector<std::size_t> selected_;  // the items kept, in order
  bool first_reshape_ = true;
};

}  // namespace

void register_filter_layer(LayerRegistry& registry) { add_layer<FilterLayer>(registry, "Filter"); }

}  // namespace xtrain

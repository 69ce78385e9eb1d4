// ArgMax (argmax_param: out_max_val, top_k, axis): the indices of the top_k
// largest values, largest first.
//  - With axis: searched along that axis; the top has the bottom's shape with
//    that axis resized to top_k, holding the indices, or with out_max_val the
//    values instead.
//  - Without axis: searched over everything after the first axis; the top is
//    (N, 1, top_k), or (N, 2, top_k) with out_max_val: the indices, then the
//    values. (Caffe pads the shape to at least 3 axes: (N, 1, top_k, ...).)
// Equal values rank the higher index first, as Caffe's sort on (value, index)
// pairs does. There is no gradient; asking for one is an error.
#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/reduction_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/reduction_kernels.hpp"
#endif

namespace xtrain {
namespace {

class ArgMaxLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "ArgMax"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    const ArgMaxParameter& argmax = param_.argmax_param();
    out_max_val_ = argmax.out_max_val();
    XTRAIN_CHECK(argmax.top_k() >= 1 && argmax.top_k() <= std::numeric_limits<int>::max(), where(),
                 ": argmax_param.top_k must be at least 1, got ", argmax.top_k());
    top_k_ = static_cast<int>(argmax.top_k());
    has_axis_ = argmax.has_axis();
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    std::vector<int> shape;
    if (has_axis_) {
      const int axis = param_.argmax_param().axis();
      XTRAIN_CHECK(axis >= -input.num_axes() && axis < input.num_axes(), where(),
                   ": argmax_param.axis ", axis, " is out of range for the bottom of shape ",
                   input.shape_string());
      axis_ = input.canonical_axis_index(axis);
      XTRAIN_CHECK(top_k_ <= input.shape(axis_), where(), ": top_k ", top_k_,
                   " is larger than axis ", axis_, " of the bottom ", input.shape_string());
      shape = input.shape();
      shape[axis_] = top_k_;
      candidates_ = static_cast<std::size_t>(input.shape(axis_));
      stride_ = input.count(axis_ + 1);
    } else {
      XTRAIN_CHECK(input.num_axes() >= 1, where(), ": the bottom must have at least one axis");
      XTRAIN_CHECK(static_cast<std::size_t>(top_k_) <= input.count(1), where(), ": top_k ", top_k_,
                   " is larger than the ", input.count(1), " values per item of the bottom ",
                   input.shape_string(), "; lower top_k or set axis");
      shape.assign(std::max(input.num_axes(), 3), 1);
      shape[0] = input.shape(0);
      shape[1] = out_max_val_ ? 2 : 1;
      shape[2] = top_k_;
      candidates_ = input.count(1);
      stride_ = 1;
    }
    top[0]->reshape(shape);
    ranked_.resize(candidates_);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    const std::size_t k = static_cast<std::size_t>(top_k_);
    if (candidates_ == 0) return;
    const std::size_t searches = bottom[0]->count() / candidates_;
    for (std::size_t s = 0; s < searches; ++s) {
      // Search s runs along the axis at (outer, inner) = (s / stride, s % stride).
      const std::size_t outer = s / stride_;
      const std::size_t inner = s % stride_;
      const float* line = x + outer * candidates_ * stride_ + inner;
      for (std::size_t j = 0; j < candidates_; ++j) {
        ranked_[j] = {line[j * stride_], static_cast<int>(j)};
      }
      // std::greater<std::pair<float, int>>'s order, which the kernel shares.
      std::partial_sort(ranked_.begin(), ranked_.begin() + top_k_, ranked_.end(),
                        [](const std::pair<float, int>& a, const std::pair<float, int>& b) {
                          return ops::argmax_ranks_before(a.first, a.second, b.first, b.second);
                        });
      for (std::size_t j = 0; j < k; ++j) {
        const float index = static_cast<float>(ranked_[j].second);
        if (has_axis_) {
          y[(outer * k + j) * stride_ + inner] = out_max_val_ ? ranked_[j].first : index;
        } else if (out_max_val_) {
          y[2 * s * k + j] = index;
          y[2 * s * k + k + j] = ranked_[j].first;
        } else {
          y[s * k + j] = index;
        }
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (candidates_ == 0) return;
    cuda::argmax(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(),
                 bottom[0]->count() / candidates_, candidates_, stride_, top_k_, has_axis_,
                 out_max_val_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_cpu(top, propagate_down, bottom);  // checks only; touches no data
  }
#endif

  void backward_cpu(const BlobVec&, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    XTRAIN_CHECK(!propagate_down[0], where(), " has no gradient, but its bottom '",
                 param_.bottom_size() > 0 ? param_.bottom(0) : std::string("?"), "' (",
                 bottom[0]->shape_string(), ") needs one; add propagate_down: false to this layer");
  }

 private:
  bool out_max_val_ = false;
  bool has_axis_ = false;
  int top_k_ = 1;
  int axis_ = 0;
  std::size_t candidates_ = 0;  // values searched per output
  std::size_t stride_ = 1;      // distance between them
  std::vector<std::pair<float, int>> ranked_;
};

}  // namespace

void register_argmax_layer(LayerRegistry& registry) { add_layer<ArgMaxLayer>(registry, "ArgMax"); }

}  // namespace xtrain

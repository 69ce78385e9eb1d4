// Slice (Caffe type "Slice"): cuts the bottom along one axis
// (slice_param.axis, default 1; or the legacy slice_dim) into the tops, the
// inverse of Concat. With slice_point p_1 < ... < p_{T-1} (one fewer than the
// tops) top t gets indices [p_t, p_{t+1}) with p_0 = 0 and p_T = the axis
// size; without slice points the axis is split into T equal parts. Backward
// pastes the tops' diffs back together. A single top is a view of the bottom.
#include <algorithm>
#include <vector>

#include "layers/axis_parts.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class SliceLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Slice"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const SliceParameter& slice = param_.slice_param();
    XTRAIN_CHECK(!(slice.has_axis() && slice.has_slice_dim()), where(),
                 ": give slice_param.axis or the legacy slice_dim, not both");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    const SliceParameter& slice = param_.slice_param();
    if (slice.has_slice_dim()) {
      XTRAIN_CHECK(static_cast<int>(slice.slice_dim()) < input.num_axes(), where(), ": slice_dim ",
                   slice.slice_dim(), " is out of range for the bottom of shape ",
                   input.shape_string());
      axis_ = static_cast<int>(slice.slice_dim());
    } else {
      XTRAIN_CHECK(slice.axis() >= -input.num_axes() && slice.axis() < input.num_axes(), where(),
                   ": slice_param.axis ", slice.axis(), " is out of range for the bottom of shape ",
                   input.shape_string());
      axis_ = input.canonical_axis_index(slice.axis());
    }
    const int axis_size = input.shape(axis_);
    const int tops = static_cast<int>(top.size());
    sizes_.clear();
    if (slice.slice_point_size() > 0) {
      XTRAIN_CHECK(slice.slice_point_size() == tops - 1, where(), ": ", slice.slice_point_size(),
                   " slice_point values for ", tops, " tops; give one fewer than the tops");
      int previous = 0;
      for (int i = 0; i < slice.slice_point_size(); ++i) {
        const int point = static_cast<int>(slice.slice_point(i));
        XTRAIN_CHECK(point > previous && point < axis_size, where(), ": slice_point ", point,
                     " must lie after the previous point (", previous, ") and inside axis ", axis_,
                     " of the bottom of shape ", input.shape_string(),
                     "; slice points must increase strictly within the axis");
        sizes_.push_back(point - previous);
        previous = point;
      }
      sizes_.push_back(axis_size - previous);
    } else {
      XTRAIN_CHECK(axis_size % tops == 0, where(), ": ", tops, " tops do not divide axis ", axis_,
                   " of the bottom of shape ", input.shape_string(),
                   " into equal parts; give slice_point values");
      sizes_.assign(tops, axis_size / tops);
    }
    std::vector<int> top_shape = input.shape();
    for (int t = 0; t < tops; ++t) {
      XTRAIN_CHECK(tops == 1 || top[t] != bottom[0], where(),
                   " cannot run in place; give its tops names different from its bottom");
      top_shape[axis_] = sizes_[t];
      top[t]->reshape(top_shape);
    }
    outer_ = input.count(0, axis_);
    inner_ = input.count(axis_ + 1);
    if (tops == 1) {
      top[0]->share_data(input);
      top[0]->share_diff(input);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (top.size() == 1) return;
    const float* input = bottom[0]->cpu_data();
    for_each_axis_part(
        *bottom[0], top, axis_, inner_,
        [&](std::size_t t, std::size_t block, std::size_t bottom_block, std::size_t offset) {
          float* output = top[t]->mutable_cpu_data();
          for (std::size_t o = 0; o < outer_; ++o) {
            const float* source = input + o * bottom_block + offset;
            std::copy(source, source + block, output + o * block);
          }
        });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0] || top.size() == 1) return;
    float* input_diff = bottom[0]->mutable_cpu_diff();
    for_each_axis_part(
        *bottom[0], top, axis_, inner_,
        [&](std::size_t t, std::size_t block, std::size_t bottom_block, std::size_t offset) {
          const float* diff = top[t]->cpu_diff();
          for (std::size_t o = 0; o < outer_; ++o) {
            std::copy(diff + o * block, diff + (o + 1) * block,
                      input_diff + o * bottom_block + offset);
          }
        });
  }

#ifdef XTRAIN_USE_CUDA
  // Top t is `outer` rows of sizes_[t] * inner values, cut from each bottom
  // row at its offset: one strided copy per top.
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (top.size() == 1) return;
    const float* input = bottom[0]->gpu_data();
    for_each_axis_part(
        *bottom[0], top, axis_, inner_,
        [&](std::size_t t, std::size_t block, std::size_t bottom_block, std::size_t offset) {
          math::gpu::copy_rows(outer_, block, input + offset, bottom_block,
                               top[t]->mutable_gpu_data(), block);
        });
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0] || top.size() == 1) return;
    float* input_diff = bottom[0]->mutable_gpu_diff();
    for_each_axis_part(
        *bottom[0], top, axis_, inner_,
        [&](std::size_t t, std::size_t block, std::size_t bottom_block, std::size_t offset) {
          math::gpu::copy_rows(outer_, block, top[t]->gpu_diff(), block, input_diff + offset,
                               bottom_block);
        });
  }
#endif

 private:
  int axis_ = 1;
  std::vector<int> sizes_;  // each top's size on the axis
  std::size_t outer_ = 1;
  std::size_t inner_ = 1;
};

}  // namespace

void register_slice_layer(LayerRegistry& registry) { add_layer<SliceLayer>(registry, "Slice"); }

}  // namespace xtrain

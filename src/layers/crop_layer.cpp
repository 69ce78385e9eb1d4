// Crop (crop_param: axis, default 2; offset): crops bottom[0] to the shape of
// bottom[1] on the axes from `axis` on; earlier axes keep bottom[0]'s sizes.
// On a cropped axis a, the top takes bottom[0]'s positions
// [offset_a, offset_a + bottom[1].shape(a)), with offset_a the single offset
// given, the a-th of one offset per cropped axis, or 0 if none is given.
//   top[i] = bottom0[i + offset]
//   dE/dbottom0 = dE/dtop at the cropped positions, 0 elsewhere
// bottom[1] only supplies the shape; it gets no gradient.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/crop_geometry.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/copy_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class CropLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Crop"; }
  int exact_num_bottom_blobs() const override { return 2; }
  int exact_num_top_blobs() const override { return 1; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index == 0; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0] && top[0] != bottom[1], where(),
                 " cannot run in place; give its top a name different from its bottoms");
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    const Blob& reference = *bottom[1];
    const int axes = input.num_axes();
    XTRAIN_CHECK(axes == reference.num_axes(), where(), ": bottom[0] ", input.shape_string(),
                 " and bottom[1] ", reference.shape_string(), " must have the same number of axes");
    const CropParameter& crop = param_.crop_param();
    XTRAIN_CHECK(crop.axis() >= -axes && crop.axis() < axes, where(), ": crop_param.axis ",
                 crop.axis(), " is out of range for the bottoms ", input.shape_string(), " (", axes,
                 " axes)");
    const int start = input.canonical_axis_index(crop.axis());
    XTRAIN_CHECK(crop.offset_size() <= 1 || start + crop.offset_size() == axes, where(), " has ",
                 crop.offset_size(), " offsets, but crops ", axes - start, " axes (", start, " to ",
                 axes - 1, " of ", input.shape_string(),
                 "); give one offset for all or one per cropped axis");

    std::vector<int> shape = input.shape();
    offsets_.assign(axes, 0);
    for (int a = start; a < axes; ++a) {
      const std::uint32_t offset = crop.offset_size() == 0   ? 0
                                   : crop.offset_size() == 1 ? crop.offset(0)
                                                             : crop.offset(a - start);
      XTRAIN_CHECK(static_cast<long long>(offset) + reference.shape(a) <= input.shape(a), where(),
                   ": on axis ", a, " the crop of size ", reference.shape(a), " at offset ", offset,
                   " does not fit in bottom[0] ", input.shape_string(),
                   "; lower the offset or crop to a smaller bottom[1] (", reference.shape_string(),
                   ")");
      shape[a] = reference.shape(a);
      offsets_[a] = offset;
    }
    top[0]->reshape(shape);
    XTRAIN_CHECK(axes >= 1 && axes <= CropGeometry::kMaxAxes, where(), ": the bottoms ",
                 input.shape_string(), " have ", axes, " axes; Crop takes 1 to ",
                 CropGeometry::kMaxAxes);
    geometry_.axes = axes;
    geometry_.strides[axes - 1] = 1;
    for (int a = axes - 2; a >= 0; --a) {
      geometry_.strides[a] = geometry_.strides[a + 1] * input.shape(a + 1);
    }
    for (int a = 0; a < axes; ++a) {
      geometry_.offsets[a] = offsets_[a];
      geometry_.top_shape[a] = static_cast<std::size_t>(shape[a]);
    }
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for_each_line(*top[0], [&](std::size_t top_start, std::size_t bottom_start, std::size_t n) {
      std::copy_n(x + bottom_start, n, y + top_start);
    });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    std::fill_n(dx, bottom[0]->count(), 0.0f);
    for_each_line(*top[0], [&](std::size_t top_start, std::size_t bottom_start, std::size_t n) {
      std::copy_n(dy + top_start, n, dx + bottom_start);
    });
  }

 private:
  // Calls copy(top_start, bottom_start, n) for every run of n values along
  // the last axis of the top, with where it starts in the top and in bottom[0].
  template <typename Copy>
  void for_each_line(const Blob& output, Copy copy) const {
    const std::size_t line = geometry_.line_length();
    if (line == 0) return;
    const std::size_t lines = output.count() / line;
    for (std::size_t l = 0; l < lines; ++l) copy(l * line, geometry_.line_start(l), line);
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    cuda::crop_forward(bottom[0]->gpu_data(), top[0]->mutable_gpu_data(), top[0]->count(),
                       geometry_);
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    float* dx = bottom[0]->mutable_gpu_diff();
    math::gpu::set(bottom[0]->count(), 0.0f, dx);
    cuda::crop_backward(top[0]->gpu_diff(), dx, top[0]->count(), geometry_);
  }
#endif

  std::vector<std::size_t> offsets_;  // per axis of bottom[0]
  CropGeometry geometry_;             // where each top line comes from
};

}  // namespace

void register_crop_layer(LayerRegistry& registry) { add_layer<CropLayer>(registry, "Crop"); }

}  // namespace xtrain

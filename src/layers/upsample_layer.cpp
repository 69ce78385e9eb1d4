// Upsample (upsample_param { scale: s }, as the Caffe YOLOv3 forks; Darknet's
// [upsample] with stride s): nearest-neighbour upsampling, every value
// becomes an s x s block, N x C x H x W -> N x C x sH x sW.
//   top[n, c, y, x] = bottom[n, c, floor(y / s), floor(x / s)]
//   dE/dbottom      = dE/dtop summed over each block
// The index math is layers/upsample_ops.hpp, run by the CPU loop and the CUDA
// kernels alike. scale: 1 (the default) copies.
#include <climits>
#include <cstdint>
#include <vector>

#include "core/device_apply.hpp"
#include "core/device_for_each_index.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/upsample_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class UpsampleLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Upsample"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const int scale = param_.upsample_param().scale();
    XTRAIN_CHECK(scale >= 1, where(), ": upsample_param { scale: ", scale,
                 " } must be at least 1 (the factor by which height and width grow)");
    geometry_.scale = scale;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == 4, where(), ": the bottom ", input.shape_string(),
                 " must be 4-d (N x C x H x W)");
    geometry_.height = input.shape(2);
    geometry_.width = input.shape(3);
    XTRAIN_CHECK(geometry_.height * geometry_.scale <= INT_MAX &&
                     geometry_.width * geometry_.scale <= INT_MAX,
                 where(), ": the bottom ", input.shape_string(), " upsampled by ", geometry_.scale,
                 " is too large for a blob's axis");
    top[0]->reshape(std::vector<int>{input.shape(0), input.shape(1),
                                     static_cast<int>(geometry_.height * geometry_.scale),
                                     static_cast<int>(geometry_.width * geometry_.scale)});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override { forward_on(bottom, top); }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_on(top, propagate_down, bottom);
  }
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override { forward_on(bottom, top); }
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    backward_on(top, propagate_down, bottom);
  }

 private:
  void forward_on(const BlobVec& bottom, const BlobVec& top) {
    const Device& on = device();
    const ops::UpsampleForward op{geometry_, ops::data_on(on, *bottom[0]),
                                  ops::mutable_data_on(on, *top[0])};
    ops::for_each_index_on(on, static_cast<std::int64_t>(top[0]->count()), op);
  }

  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) {
    if (!propagate_down[0]) return;
    const Device& on = device();
    const ops::UpsampleBackward op{geometry_, ops::diff_on(on, *top[0]),
                                   ops::mutable_diff_on(on, *bottom[0])};
    ops::for_each_index_on(on, static_cast<std::int64_t>(bottom[0]->count()), op);
  }

  ops::UpsampleGeometry geometry_;
};

}  // namespace

void register_upsample_layer(LayerRegistry& registry) {
  add_layer<UpsampleLayer>(registry, "Upsample");
}

}  // namespace xtrain

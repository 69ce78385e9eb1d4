// Tile (tile_param: axis, tiles T): repeats the bottom T times along `axis`.
// Viewing the bottom as (outer, inner) with outer = count(0, axis) and
// inner = count(axis), each row of `inner` values is written T times in a row:
//   top[o, t, :] = bottom[o, :]          top shape: shape(axis) * T
//   dE/dbottom[o, :] = sum over t of dE/dtop[o, t, :]
#include <algorithm>
#include <limits>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/copy_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class TileLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "Tile"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override {
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    const TileParameter& tile = param_.tile_param();
    XTRAIN_CHECK(tile.has_tiles(), where(),
                 ": tile_param.tiles (the number of copies) must be set");
    XTRAIN_CHECK(tile.tiles() > 0, where(), ": tile_param.tiles must be positive, got ",
                 tile.tiles());
    tiles_ = tile.tiles();
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    const int axis = param_.tile_param().axis();
    XTRAIN_CHECK(axis >= -input.num_axes() && axis < input.num_axes(), where(),
                 ": tile_param.axis ", axis, " is out of range for the bottom ",
                 input.shape_string(), " (", input.num_axes(), " axes)");
    const int first = input.canonical_axis_index(axis);
    std::vector<int> shape = input.shape();
    const long long tiled = static_cast<long long>(shape[first]) * tiles_;
    XTRAIN_CHECK(tiled <= std::numeric_limits<int>::max(), where(), ": ", tiles_, " tiles of axis ",
                 first, " of the bottom ", input.shape_string(), " are too many");
    shape[first] = static_cast<int>(tiled);
    top[0]->reshape(shape);
    outer_ = input.count(0, first);
    inner_ = input.count(first);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for (std::size_t o = 0; o < outer_; ++o, x += inner_) {
      for (int t = 0; t < tiles_; ++t, y += inner_) std::copy_n(x, inner_, y);
    }
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    const ops::Add add;  // the functor cuda::tile_backward applies
    for (std::size_t o = 0; o < outer_; ++o, dx += inner_) {
      std::copy_n(dy, inner_, dx);
      dy += inner_;
      for (int t = 1; t < tiles_; ++t, dy += inner_) {
        for (std::size_t i = 0; i < inner_; ++i) dx[i] = add(dx[i], dy[i]);
      }
    }
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    // Tile t of every row o: top[o, t, :] = bottom[o, :].
    const float* x = bottom[0]->gpu_data();
    float* y = top[0]->mutable_gpu_data();
    for (int t = 0; t < tiles_; ++t) {
      math::gpu::copy_rows(outer_, inner_, x, inner_, y + t * inner_, tiles_ * inner_);
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    cuda::tile_backward(top[0]->gpu_diff(), bottom[0]->mutable_gpu_diff(), outer_, tiles_, inner_);
  }
#endif

 private:
  int tiles_ = 1;
  std::size_t outer_ = 0;
  std::size_t inner_ = 0;
};

}  // namespace

void register_tile_layer(LayerRegistry& registry) { add_layer<TileLayer>(registry, "Tile"); }

}  // namespace xtrain

// SPP (Caffe type "SPP"): spatial pyramid pooling of an (N, C, H, W) input
// into a fixed-length vector per image, whatever H and W are.
//
// Level l (0 <= l < pyramid_height) pools each channel into b x b bins,
// b = 2^l, with Caffe's Pooling (spp_param.pool: MAX or AVE) and, per axis,
//   kernel = stride = ceil(H / b),  pad = (kernel * b - H + 1) / 2
// (Caffe's choice: the windows cover the whole input, the padding split as
// evenly as it goes). The levels are flattened per image and concatenated:
//   top (N, C * sum_l 4^l), level by level, each as (C, b, b);
// with pyramid_height 1 the top is the single level's (N, C, 1, 1), as in
// Caffe. Caffe's Pooling needs pad < kernel, which fails for some small inputs
// on the finer levels (e.g. H = 5 with 4 bins: kernel 2, pad 2); those are
// errors here too.
//
// Backward sums the levels' gradients into dbottom.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/pooling_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

struct LevelWindow {
  int kernel;
  int pad;
};

LevelWindow level_window(int input, int bins) {
  const int kernel = static_cast<int>(std::ceil(input / static_cast<double>(bins)));
  return {kernel, (kernel * bins - input + 1) / 2};
}

class SPPLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "SPP"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const SPPParameter& spp = param_.spp_param();
    XTRAIN_CHECK(spp.pyramid_height() >= 1, where(),
                 ": spp_param.pyramid_height must be at least 1, got ", spp.pyramid_height());
    // 2^l bins per axis must stay a sane int.
    XTRAIN_CHECK(spp.pyramid_height() <= 16, where(), ": spp_param.pyramid_height ",
                 spp.pyramid_height(), " is too large (", spp.pyramid_height() - 1,
                 " halvings of the input); use at most 16");
    XTRAIN_CHECK(spp.pool() == SPPParameter::MAX || spp.pool() == SPPParameter::AVE, where(),
                 ": spp_param.pool STOCHASTIC is not supported; use MAX or AVE");
    levels_ = static_cast<int>(spp.pyramid_height());
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == 4, where(),
                 ": the input must have 4 axes (num, channels, height, width), got ",
                 input.shape_string());
    XTRAIN_CHECK(input.shape(2) > 0 && input.shape(3) > 0, where(), ": the input ",
                 input.shape_string(), " has no pixels");
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place; give its top a name different from its bottom");
    if (input.shape() != configured_shape_) configure_levels(bottom);
    // The levels run where this layer runs (set_device may come after setup).
    for (auto& pool : pools_) pool->set_device(device());

    if (levels_ == 1) {
      pools_[0]->reshape(bottom, top);
      return;
    }
    level_input_.reshape_like(input);
    level_input_.share_data(input);
    std::size_t per_image = 0;
    for (int l = 0; l < levels_; ++l) {
      pools_[l]->reshape(bottom, {&pooled_[l]});
      per_image += pooled_[l].count(1);
    }
    top[0]->reshape({input.shape(0), static_cast<int>(per_image)});
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (levels_ == 1) {
      pools_[0]->forward(bottom, top);
      return;
    }
    const int num = top[0]->shape(0);
    const std::size_t top_row = top[0]->count(1);
    float* output = top[0]->mutable_cpu_data();
    for_each_level([&](int l, std::size_t row, std::size_t offset) {
      pools_[l]->forward(bottom, {&pooled_[l]});
      const float* data = pooled_[l].cpu_data();
      for (int n = 0; n < num; ++n) {
        std::copy(data + n * row, data + (n + 1) * row, output + n * top_row + offset);
      }
    });
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (levels_ == 1) {
      pools_[0]->backward(top, {true}, bottom);
      return;
    }
    float* input_diff = bottom[0]->mutable_cpu_diff();
    const std::size_t count = bottom[0]->count();
    std::fill(input_diff, input_diff + count, 0.0f);
    const int num = top[0]->shape(0);
    const std::size_t top_row = top[0]->count(1);
    const float* output_diff = top[0]->cpu_diff();
    for_each_level([&](int l, std::size_t row, std::size_t offset) {
      float* level_diff = pooled_[l].mutable_cpu_diff();
      for (int n = 0; n < num; ++n) {
        const float* source = output_diff + n * top_row + offset;
        std::copy(source, source + row, level_diff + n * row);
      }
      pools_[l]->backward({&pooled_[l]}, {true}, {&level_input_});
      const float* level_input_diff = level_input_.cpu_diff();
      const ops::Add add;  // the functor cuda::add applies
      for (std::size_t i = 0; i < count; ++i)
        input_diff[i] = add(input_diff[i], level_input_diff[i]);
    });
  }

#ifdef XTRAIN_USE_CUDA
  // The CPU passes with device copies; the levels' Pooling layers run their
  // own GPU paths.
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (levels_ == 1) {
      pools_[0]->forward(bottom, top);
      return;
    }
    const std::size_t num = static_cast<std::size_t>(top[0]->shape(0));
    const std::size_t top_row = top[0]->count(1);
    float* output = top[0]->mutable_gpu_data();
    for_each_level([&](int l, std::size_t row, std::size_t offset) {
      pools_[l]->forward(bottom, {&pooled_[l]});
      math::gpu::copy_rows(num, row, pooled_[l].gpu_data(), row, output + offset, top_row);
    });
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    if (levels_ == 1) {
      pools_[0]->backward(top, {true}, bottom);
      return;
    }
    const std::size_t count = bottom[0]->count();
    float* input_diff = bottom[0]->mutable_gpu_diff();
    math::gpu::set(count, 0.0f, input_diff);
    const std::size_t num = static_cast<std::size_t>(top[0]->shape(0));
    const std::size_t top_row = top[0]->count(1);
    const float* output_diff = top[0]->gpu_diff();
    for_each_level([&](int l, std::size_t row, std::size_t offset) {
      math::gpu::copy_rows(num, row, output_diff + offset, top_row, pooled_[l].mutable_gpu_diff(),
                           row);
      pools_[l]->backward({&pooled_[l]}, {true}, {&level_input_});
      cuda::add(input_diff, level_input_.gpu_diff(), input_diff, count);
    });
  }
#endif

 private:
  // body(l, row, offset) for every level l: each row of the top (one per
  // image) holds level l's `row` values at `offset` (the levels side by
  // side, as reshape sized them).
  template <typename Body>
  void for_each_level(Body body) {
    std::size_t offset = 0;
    for (int l = 0; l < levels_; ++l) {
      const std::size_t row = pooled_[l].count(1);
      body(l, row, offset);
      offset += row;
    }
  }

  // One Pooling layer per level, sized for this input.
  void configure_levels(const BlobVec& bottom) {
    const Blob& input = *bottom[0];
    const int height = input.shape(2);
    const int width = input.shape(3);
    const SPPParameter& spp = param_.spp_param();
    pools_.clear();
    pooled_ = std::vector<Blob>(levels_);
    for (int l = 0; l < levels_; ++l) {
      const int bins = 1 << l;
      const LevelWindow rows = level_window(height, bins);
      const LevelWindow cols = level_window(width, bins);
      XTRAIN_CHECK(rows.pad < rows.kernel && cols.pad < cols.kernel, where(), ": pyramid level ", l,
                   " (", bins, "x", bins, " bins) of the input ", input.shape_string(), " needs a ",
                   rows.kernel, "x", cols.kernel, " window with padding ", rows.pad, "x", cols.pad,
                   ", but pooling needs padding smaller than the window (as in "
                   "Caffe); use a smaller pyramid_height or a larger input");
      LayerParameter pool;
      pool.set_name(name() + "/level" + std::to_string(l));
      pool.set_type("Pooling");
      pool.set_phase(phase());
      PoolingParameter* pooling = pool.mutable_pooling_param();
      pooling->set_pool(spp.pool() == SPPParameter::MAX ? PoolingParameter::MAX
                                                        : PoolingParameter::AVE);
      pooling->set_kernel_h(rows.kernel);
      pooling->set_kernel_w(cols.kernel);
      pooling->set_stride_h(rows.kernel);
      pooling->set_stride_w(cols.kernel);
      pooling->set_pad_h(rows.pad);
      pooling->set_pad_w(cols.pad);
      auto layer = std::make_unique<PoolingLayer>(pool);
      layer->set_device(device());
      layer->setup(bottom, {&pooled_[l]});
      XTRAIN_ASSERT(pooled_[l].shape(2) == bins && pooled_[l].shape(3) == bins, where(), " level ",
                    l, ": ", pooled_[l].shape_string());
      pools_.push_back(std::move(layer));
    }
    configured_shape_ = input.shape();
  }

  int levels_ = 1;
  std::vector<int> configured_shape_;
  std::vector<std::unique_ptr<PoolingLayer>> pools_;
  std::vector<Blob> pooled_;  // each level's output (unused with one level)
  // Shares the bottom's data, with a diff of its own for each level's
  // gradient before they are summed.
  Blob level_input_;
};

}  // namespace

void register_spp_layer(LayerRegistry& registry) { add_layer<SPPLayer>(registry, "SPP"); }

}  // namespace xtrain

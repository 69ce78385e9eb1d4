// EuclideanLoss: half the mean squared distance between predictions a and
// targets b, Caffe 1.0's EuclideanLossLayer. With N = a.shape(0):
//   loss   = sum((a - b)^2) / (2 N)
//   dE/da  =  w/N * (a - b),   dE/db = -w/N * (a - b)    (w: the loss weight)
// Both bottoms may receive gradients (e.g. for two predictions that should
// agree), so force_backward reaches both. Each sample of a and b must hold the
// same number of values; their shapes may differ otherwise.
#include "core/elementwise_ops.hpp"
#include "core/math_functions.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/loss_layer.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/elementwise_kernels.hpp"
#include "cuda/math_gpu.hpp"
#endif

namespace xtrain {
namespace {

class EuclideanLossLayer : public LossLayer {
 public:
  using LossLayer::LossLayer;
  const char* type() const override { return "EuclideanLoss"; }
  bool allow_force_backward(int) const override { return true; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    reshape_loss_top(bottom, top);
    XTRAIN_CHECK(bottom[0]->count(1) == bottom[1]->count(1), where(), ": ", bottom_name(0),
                 " of shape ", bottom[0]->shape_string(), " and ", bottom_name(1), " of shape ",
                 bottom[1]->shape_string(), " must hold the same number of values per sample (",
                 bottom[0]->count(1), " vs ", bottom[1]->count(1), ")");
    difference_.reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(bottom[0]->shape(0), top)) return;
    const std::size_t count = bottom[0]->count();
    const float* a = bottom[0]->cpu_data();
    const float* b = bottom[1]->cpu_data();
    float* difference = difference_.mutable_cpu_data();
    const ops::Difference subtract;
    for (std::size_t j = 0; j < count; ++j) difference[j] = subtract(a[j], b[j]);
    const float sum_of_squares = math::dot(count, difference, difference);
    top[0]->mutable_cpu_data()[0] = sum_of_squares / static_cast<float>(bottom[0]->shape(0)) / 2.0f;
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (bottom[0]->shape(0) == 0) return;
    for_each_gradient(top, propagate_down, bottom, [&](int i, float scale) {
      const std::size_t count = bottom[i]->count();
      const float* difference = difference_.cpu_data();
      float* diff = bottom[i]->mutable_cpu_diff();
      const ops::ScaleBy scale_by{scale};
      for (std::size_t j = 0; j < count; ++j) diff[j] = scale_by(difference[j]);
    });
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (empty_batch(bottom[0]->shape(0), top)) return;
    const std::size_t count = bottom[0]->count();
    float* difference = difference_.mutable_gpu_data();
    cuda::subtract(bottom[0]->gpu_data(), bottom[1]->gpu_data(), difference, count);
    const float sum_of_squares = math::gpu::dot(count, difference, difference);
    top[0]->mutable_cpu_data()[0] = sum_of_squares / static_cast<float>(bottom[0]->shape(0)) / 2.0f;
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (bottom[0]->shape(0) == 0) return;
    for_each_gradient(top, propagate_down, bottom, [&](int i, float scale) {
      cuda::scale_values(difference_.gpu_data(), scale, bottom[i]->mutable_gpu_diff(),
                         bottom[i]->count());
    });
  }
#endif

 private:
  // body(i, scale) for each bottom i whose gradient is asked for:
  // dE/d(bottom i) = scale (a - b), scale = +-dE/dloss / num (+ for a, - for b).
  template <typename Body>
  static void for_each_gradient(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom, Body body) {
    for (int i = 0; i < 2; ++i) {
      if (static_cast<int>(propagate_down.size()) <= i || !propagate_down[i]) continue;
      const float sign = i == 0 ? 1.0f : -1.0f;
      body(i, sign * top[0]->cpu_diff()[0] / static_cast<float>(bottom[i]->shape(0)));
    }
  }

  Blob difference_;  // a - b, kept for backward
};

}  // namespace

void register_euclidean_loss_layer(LayerRegistry& registry) {
  add_layer<EuclideanLossLayer>(registry, "EuclideanLoss");
}

}  // namespace xtrain

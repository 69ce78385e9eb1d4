// Softmax: see softmax_layer.hpp for the math. The loops run over channels
// outside and inner positions inside, so memory is read in order whatever the
// axis. Tasks of one sample and a run of inner positions are spread over the
// thread pool; each position's sums run over the channels in order, so the
// results do not depend on the thread count.
#include "layers/softmax_layer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/parallel_loop.hpp"
#include "layers/builtin_layers.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include <climits>

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/cudnn_descriptors.hpp"
#include "layers/elementwise_kernels.hpp"
#endif

namespace xtrain {

#ifdef XTRAIN_USE_CUDA
struct SoftmaxLayer::CudnnState {
  bool usable = false;       // the sizes fit cuDNN's int dimensions
  cuda::CudnnTensor tensor;  // (outer, channels, inner, 1)
};
#endif

SoftmaxLayer::SoftmaxLayer(const LayerParameter& param) : Layer(param) {}

// Out of line: CudnnState is complete only here.
SoftmaxLayer::~SoftmaxLayer() = default;

namespace {

// Inner positions per task: their values at one channel are a contiguous run.
constexpr std::size_t kPositionsPerTask = 512;

}  // namespace

void SoftmaxLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& input = *bottom[0];
  axis_ = input.canonical_axis_index(param_.softmax_param().axis());
  outer_num_ = input.count(0, axis_);
  channels_ = static_cast<std::size_t>(input.shape(axis_));
  inner_num_ = input.count(axis_ + 1);
  top[0]->reshape_like(input);
  per_position_.resize(outer_num_ * inner_num_);
#ifdef XTRAIN_USE_CUDA
  if (device().is_gpu()) {
    if (!cudnn_) cudnn_ = std::make_unique<CudnnState>();
    const std::size_t count = input.count();
    cudnn_->usable = count > 0 && count <= static_cast<std::size_t>(INT_MAX);
    if (cudnn_->usable) {
      cudnn_->tensor.set(static_cast<int>(outer_num_), static_cast<int>(channels_),
                         static_cast<int>(inner_num_), 1);
    }
  }
#endif
}

template <typename Body>
void SoftmaxLayer::for_each_task(std::size_t work_per_value, Body body) {
  const std::size_t tasks_per_sample = (inner_num_ + kPositionsPerTask - 1) / kPositionsPerTask;
  const std::size_t positions = std::min(inner_num_, kPositionsPerTask);
  parallel_for(static_cast<std::int64_t>(outer_num_ * tasks_per_sample),
               positions * channels_ * work_per_value, [&](std::int64_t task) {
                 const std::size_t o = static_cast<std::size_t>(task) / tasks_per_sample;
                 const std::size_t first =
                     static_cast<std::size_t>(task) % tasks_per_sample * kPositionsPerTask;
                 const std::size_t last = std::min(inner_num_, first + kPositionsPerTask);
                 body(o * channels_ * inner_num_ + first,
                      per_position_.data() + o * inner_num_ + first, last - first);
               });
}

void SoftmaxLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (channels_ == 0) return;
  const std::size_t inner = inner_num_;
  const float* bottom_data = bottom[0]->cpu_data();
  float* top_data = top[0]->mutable_cpu_data();
  for_each_task(24, [&](std::size_t at, float* scratch, std::size_t width) {
    const float* x = bottom_data + at;
    float* y = top_data + at;
    std::copy_n(x, width, scratch);
    for (std::size_t c = 1; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i) scratch[i] = std::max(scratch[i], x[c * inner + i]);
    }
    // y and x may be the same array: each element is read before it is written.
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i)
        y[c * inner + i] = std::exp(x[c * inner + i] - scratch[i]);
    }
    std::copy_n(y, width, scratch);
    for (std::size_t c = 1; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i) scratch[i] += y[c * inner + i];
    }
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i) y[c * inner + i] /= scratch[i];
    }
  });
}

void SoftmaxLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0] || channels_ == 0) return;
  const std::size_t inner = inner_num_;
  const float* top_data = top[0]->cpu_data();
  const float* top_diff = top[0]->cpu_diff();
  float* bottom_diff = bottom[0]->mutable_cpu_diff();
  for_each_task(4, [&](std::size_t at, float* dot, std::size_t width) {
    const float* y = top_data + at;
    const float* dy = top_diff + at;
    float* dx = bottom_diff + at;
    std::fill_n(dot, width, 0.0f);
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i) dot[i] += dy[c * inner + i] * y[c * inner + i];
    }
    // dx may be dy (in place): the dot products are complete before any write.
    for (std::size_t c = 0; c < channels_; ++c) {
      for (std::size_t i = 0; i < width; ++i) {
        dx[c * inner + i] = (dy[c * inner + i] - dot[i]) * y[c * inner + i];
      }
    }
  });
}

#ifdef XTRAIN_USE_CUDA
void SoftmaxLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  const float* x = bottom[0]->gpu_data();
  float* y = top[0]->mutable_gpu_data();
  // cudnn_ is null if the device was set after reshape (a layer run inside
  // another, like SoftmaxWithLoss's).
  if (!cudnn_ || !cudnn_->usable || x == y) {
    cuda::softmax_forward(x, y, outer_num_, channels_, inner_num_, cuda::stream());
    return;
  }
  // MODE_CHANNEL: over C for each (n, h, w), i.e. over the softmax axis for
  // each (outer, inner) position. y = 1 * softmax(x) + 0 * y.
  XTRAIN_CUDNN_CHECK(cudnnSoftmaxForward(
      cuda::cudnn_handle(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, cuda::cudnn_one(),
      cudnn_->tensor.get(), x, cuda::cudnn_zero(), cudnn_->tensor.get(), y));
}

void SoftmaxLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* y = top[0]->gpu_data();
  const float* dy = top[0]->gpu_diff();
  float* dx = bottom[0]->mutable_gpu_diff();
  if (!cudnn_ || !cudnn_->usable || dx == dy) {
    cuda::softmax_backward(y, dy, dx, outer_num_, channels_, inner_num_, cuda::stream());
    return;
  }
  // dx = 1 * (dy - sum_c dy * y) * y + 0 * dx.
  XTRAIN_CUDNN_CHECK(cudnnSoftmaxBackward(cuda::cudnn_handle(), CUDNN_SOFTMAX_ACCURATE,
                                          CUDNN_SOFTMAX_MODE_CHANNEL, cuda::cudnn_one(),
                                          cudnn_->tensor.get(), y, cudnn_->tensor.get(), dy,
                                          cuda::cudnn_zero(), cudnn_->tensor.get(), dx));
}
#endif

void register_softmax_layer(LayerRegistry& registry) {
  add_layer<SoftmaxLayer>(registry, "Softmax");
}

}  // namespace xtrain

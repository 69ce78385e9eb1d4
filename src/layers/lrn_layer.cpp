// LRN (Caffe type "LRN"): local response normalisation of an (N, C, H, W)
// input, n = local_size (odd), p = (n - 1) / 2:
//   top = bottom * scale^-beta
//   ACROSS_CHANNELS: scale[c, y, x] = k + alpha / n * sum over c' in [c - p, c + p]
//                                     of bottom[c', y, x]^2
//   WITHIN_CHANNEL:  scale[c, y, x] = 1 + alpha * (sum over the n x n window
//                                     centred on (y, x) of bottom[c, ., .]^2) / n^2
// Channels and pixels outside the input count as zeros. WITHIN_CHANNEL is
// what Caffe builds from square, AVE pooling (kernel n, pad p, stride 1, whose
// divisor is always n^2) and power (shift 1, scale alpha, power -beta) layers:
// it ignores k, and so do we.
//
// Backward, with the same windows (a window holds j exactly when the window
// centred on j holds i, so the sums below run over the window of i):
//   dbottom_i = dtop_i * scale_i^-beta
//               - 2 alpha beta / d * bottom_i * sum over j in window(i) of
//                 dtop_j * top_j / scale_j
// where d = n (ACROSS_CHANNELS) or n^2 (WITHIN_CHANNEL).
//
// The kernels (a reference and a fast, parallel one) are in lrn_kernels.hpp.
// Not in place: backward reads both bottom and top. On the CPU the layer
// keeps nothing else from forward to backward: backward recomputes scale
// and power from the bottom with forward's code.
//
// On a GPU, ACROSS_CHANNELS runs on cuDNN (cudnnLRNCrossChannelForward and
// Backward, CUDNN_LRN_CROSS_CHANNEL_DIM1 over an NCHW tensor) when its
// parameters are in cuDNN's range (local_size <= 16, k >= 1e-5, beta >= 0.01).
// cuDNN computes y = x * (k + alpha / n * sum of x^2 over the window)^-beta,
// dividing its lrnAlpha by lrnN itself, with the window [c - (n-1)/2,
// c + n - 1 - (n-1)/2], which for odd n is Caffe's [c - p, c + p]: so Caffe's
// alpha is passed unchanged (passing alpha / n would divide twice), as Caffe's
// own cuDNN LRN layer does. WITHIN_CHANNEL runs our own kernels
// (cuda/lrn_gpu_kernels.hpp; cuDNN's divisive normalisation is another
// formula), which share lrn_math.hpp with the CPU kernels. ACROSS_CHANNELS
// outside cuDNN's range runs the CPU kernels on host copies (correct through
// the blobs' lazy sync, but slow; one INFO line says so).
#include <vector>

#include "layers/builtin_layers.hpp"
#include "layers/lrn_kernels.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include <memory>

#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/cudnn_descriptors.hpp"
#include "layers/lrn_gpu_kernels.hpp"
#include "xtrain/logging.hpp"
#endif

namespace xtrain {
namespace {

class LRNLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LRN"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int exact_num_top_blobs() const override { return 1; }

  void layer_setup(const BlobVec&, const BlobVec&) override {
    const LRNParameter& lrn = param_.lrn_param();
    XTRAIN_CHECK(lrn.local_size() % 2 == 1, where(), ": lrn_param.local_size must be odd, got ",
                 lrn.local_size());
    lrn_.size = static_cast<int>(lrn.local_size());
    lrn_.alpha = lrn.alpha();
    lrn_.beta = lrn.beta();
    lrn_.k = lrn.k();
    lrn_.across_channels = lrn.norm_region() == LRNParameter::ACROSS_CHANNELS;
  }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const Blob& input = *bottom[0];
    XTRAIN_CHECK(input.num_axes() == 4, where(),
                 ": the input must have 4 axes (num, channels, height, width), got ",
                 input.shape_string());
    XTRAIN_CHECK(top[0] != bottom[0], where(),
                 " cannot run in place (backward needs both its input and its output); give "
                 "its top a name different from its bottom");
    shape_ = {input.shape(0), input.shape(1), input.shape(2), input.shape(3)};
    top[0]->reshape_like(input);
#ifdef XTRAIN_USE_CUDA
    if (device().is_gpu()) reshape_gpu();
#endif
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    lrn_forward(lrn_, shape_, bottom[0]->cpu_data(), top[0]->mutable_cpu_data());
  }

  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    lrn_backward(lrn_, shape_, bottom[0]->cpu_data(), top[0]->cpu_data(), top[0]->cpu_diff(),
                 bottom[0]->mutable_cpu_diff());
  }

#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override {
    if (!gpu_) reshape_gpu();  // the device was set after reshape
    // An empty input has no arrays or tensor descriptor (reshape_gpu); the
    // CPU kernels do nothing for it either.
    if (values() == 0) return;
    switch (gpu_->engine) {
      case GpuEngine::kCudnn:
        // y = 1 * lrn(x) + 0 * y.
        XTRAIN_CUDNN_CHECK(cudnnLRNCrossChannelForward(
            cuda::cudnn_handle(), gpu_->lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, cuda::cudnn_one(),
            gpu_->tensor.get(), bottom[0]->gpu_data(), cuda::cudnn_zero(), gpu_->tensor.get(),
            top[0]->mutable_gpu_data()));
        return;
      case GpuEngine::kOwnKernels:
        cuda::lrn_within_channel_forward_gpu(lrn_, shape_, bottom[0]->gpu_data(),
                                             gpu_values(kScratch), gpu_values(kScale),
                                             gpu_values(kPower), top[0]->mutable_gpu_data());
        return;
      case GpuEngine::kHost:
        forward_cpu(bottom, top);
        return;
    }
  }

  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0] || values() == 0) return;
    switch (gpu_->engine) {
      case GpuEngine::kCudnn:
        // dx = 1 * lrn'(x, y, dy) + 0 * dx; all four tensors have one shape.
        XTRAIN_CUDNN_CHECK(cudnnLRNCrossChannelBackward(
            cuda::cudnn_handle(), gpu_->lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, cuda::cudnn_one(),
            gpu_->tensor.get(), top[0]->gpu_data(), gpu_->tensor.get(), top[0]->gpu_diff(),
            gpu_->tensor.get(), bottom[0]->gpu_data(), cuda::cudnn_zero(), gpu_->tensor.get(),
            bottom[0]->mutable_gpu_diff()));
        return;
      case GpuEngine::kOwnKernels:
        cuda::lrn_within_channel_backward_gpu(lrn_, shape_, bottom[0]->gpu_data(),
                                              top[0]->gpu_data(), top[0]->gpu_diff(),
                                              gpu_values(kScale), gpu_values(kPower),
                                              gpu_values(kScratch), bottom[0]->mutable_gpu_diff());
        return;
      case GpuEngine::kHost:
        backward_cpu(top, propagate_down, bottom);
        return;
    }
  }
#endif

 private:
#ifdef XTRAIN_USE_CUDA
  // kCudnn: ACROSS_CHANNELS within cuDNN's range; kOwnKernels: WITHIN_CHANNEL;
  // kHost: the CPU kernels on host copies (ACROSS_CHANNELS outside cuDNN's range).
  enum class GpuEngine { kCudnn, kOwnKernels, kHost };
  // The three arrays of the own kernels, each of the input's size.
  enum GpuArray { kScale = 0, kPower = 1, kScratch = 2 };

  GpuEngine choose_gpu_engine() const {
    if (!lrn_.across_channels) return GpuEngine::kOwnKernels;
    const bool cudnn_accepts = lrn_.size >= CUDNN_LRN_MIN_N && lrn_.size <= CUDNN_LRN_MAX_N &&
                               lrn_.k >= CUDNN_LRN_MIN_K && lrn_.beta >= CUDNN_LRN_MIN_BETA;
    return cudnn_accepts ? GpuEngine::kCudnn : GpuEngine::kHost;
  }

  void reshape_gpu() {
    if (!gpu_) {
      gpu_ = std::make_unique<GpuState>();
      gpu_->engine = choose_gpu_engine();
      if (gpu_->engine == GpuEngine::kCudnn) {
        gpu_->lrn.set(static_cast<unsigned>(lrn_.size), lrn_.alpha, lrn_.beta, lrn_.k);
      } else if (gpu_->engine == GpuEngine::kHost) {
        XLOG(INFO) << where()
                   << ": cuDNN's LRN does not take local_size > 16, k < 1e-5 or beta < 0.01; "
                      "the GPU runs the CPU kernels on host copies";
      }
    }
    const std::size_t count = values();
    if (gpu_->engine == GpuEngine::kCudnn && count > 0) {
      gpu_->tensor.set(shape_.num, shape_.channels, shape_.height, shape_.width);
    }
    const std::size_t bytes = 3 * count * sizeof(float);
    if (gpu_->engine == GpuEngine::kOwnKernels && bytes > 0 &&
        (!gpu_->arrays || gpu_->arrays->size() < bytes)) {
      gpu_->arrays = std::make_unique<SyncedMemory>(bytes);
    }
  }

  float* gpu_values(GpuArray which) {
    return static_cast<float*>(gpu_->arrays->mutable_gpu_data()) + which * values();
  }

  std::size_t values() const {
    return static_cast<std::size_t>(shape_.num) * shape_.channels * shape_.height * shape_.width;
  }

  struct GpuState {
    GpuEngine engine = GpuEngine::kHost;
    cuda::CudnnLrnDescriptor lrn;
    cuda::CudnnTensor tensor;              // (num, channels, height, width)
    std::unique_ptr<SyncedMemory> arrays;  // scale, power, scratch
  };
  std::unique_ptr<GpuState> gpu_;
#endif

  LrnParameters lrn_;
  LrnShape shape_;
};

}  // namespace

void register_lrn_layer(LayerRegistry& registry) { add_layer<LRNLayer>(registry, "LRN"); }

}  // namespace xtrain

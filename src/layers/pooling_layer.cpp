#include "layers/pooling_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "layers/pooling_blocked_kernels.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/cuda_check.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/cudnn_descriptors.hpp"
#include "layers/pooling_gpu_kernels.hpp"
#endif

namespace xtrain {

bool cudnn_average_pooling_is_caffes(const PoolingGeometry& g) {
  auto axis_agrees = [](int input, int kernel, int pad, int stride, int pooled) {
    return input + 2 * pad >= kernel && pad < kernel &&
           pooled == (input + 2 * pad - kernel) / stride + 1;
  };
  return axis_agrees(g.height, g.kernel_h, g.pad_h, g.stride_h, g.pooled_h) &&
         axis_agrees(g.width, g.kernel_w, g.pad_w, g.stride_w, g.pooled_w);
}

#ifdef XTRAIN_USE_CUDA
// MAX always runs our kernels: cuDNN's max-pooling backward finds the argmax
// again by comparing x with y, so it would route a gradient differently from
// Caffe on ties (Caffe: the first maximum, row-major) and wrongly once a
// later in-place layer (Dropout, Scale, ...) has changed y; an all -inf
// window would give -inf instead of Caffe's -FLT_MAX. Our forward stores
// Caffe's argmax and backward gathers by it.
struct PoolingLayer::GpuState {
  bool cudnn_average = false;  // AVE through cuDNN (see cudnn_average_pooling_is_caffes)
  cuda::CudnnPoolingDescriptor pooling;
  cuda::CudnnTensor input;
  cuda::CudnnTensor output;
  // MAX's argmax when it is not a top: int, one per output.
  std::unique_ptr<SyncedMemory> max_index;
};
#endif

PoolingLayer::PoolingLayer(const LayerParameter& param) : Layer(param) {}

// Out of line: GpuState is complete only here.
PoolingLayer::~PoolingLayer() = default;

void PoolingLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  (void)bottom;
  (void)top;
  const PoolingParameter& pool = param_.pooling_param();
  method_ = pool.pool();
  XTRAIN_CHECK(method_ != PoolingParameter::STOCHASTIC, where(),
               ": pool: STOCHASTIC is not supported; use MAX or AVE");
  global_ = pool.global_pooling();

  const bool has_square_kernel = pool.has_kernel_size();
  const bool has_kernel_pair = pool.has_kernel_h() && pool.has_kernel_w();
  if (global_) {
    XTRAIN_CHECK(!has_square_kernel && !pool.has_kernel_h() && !pool.has_kernel_w(), where(),
                 ": with global_pooling the kernel is the whole input; remove kernel_size / "
                 "kernel_h / kernel_w");
  } else {
    XTRAIN_CHECK(has_square_kernel != has_kernel_pair, where(),
                 has_square_kernel
                     ? ": give the kernel as kernel_size or as kernel_h and kernel_w, not both"
                     : ": a kernel size is required: kernel_size, or both kernel_h and kernel_w");
  }
  XTRAIN_CHECK((!pool.has_pad() && pool.has_pad_h() && pool.has_pad_w()) ||
                   (!pool.has_pad_h() && !pool.has_pad_w()),
               where(), ": give the padding as pad or as both pad_h and pad_w, not both");
  XTRAIN_CHECK((!pool.has_stride() && pool.has_stride_h() && pool.has_stride_w()) ||
                   (!pool.has_stride_h() && !pool.has_stride_w()),
               where(), ": give the stride as stride or as both stride_h and stride_w, not both");

  if (!global_) {
    kernel_h_ = static_cast<int>(has_square_kernel ? pool.kernel_size() : pool.kernel_h());
    kernel_w_ = static_cast<int>(has_square_kernel ? pool.kernel_size() : pool.kernel_w());
    XTRAIN_CHECK(kernel_h_ > 0 && kernel_w_ > 0, where(), ": kernel size must be > 0, got ",
                 kernel_h_, "x", kernel_w_);
  }
  pad_h_ = static_cast<int>(pool.has_pad_h() ? pool.pad_h() : pool.pad());
  pad_w_ = static_cast<int>(pool.has_pad_h() ? pool.pad_w() : pool.pad());
  stride_h_ = static_cast<int>(pool.has_stride_h() ? pool.stride_h() : pool.stride());
  stride_w_ = static_cast<int>(pool.has_stride_h() ? pool.stride_w() : pool.stride());
  XTRAIN_CHECK(stride_h_ > 0 && stride_w_ > 0, where(), ": stride must be > 0, got ", stride_h_,
               "x", stride_w_);
  XTRAIN_CHECK(pad_h_ >= 0 && pad_w_ >= 0, where(), ": pad is too large: ", pad_h_, "x", pad_w_);
  if (global_) {
    XTRAIN_CHECK(pad_h_ == 0 && pad_w_ == 0 && stride_h_ == 1 && stride_w_ == 1, where(),
                 ": global_pooling needs pad 0 and stride 1, got pad ", pad_h_, "x", pad_w_,
                 " and stride ", stride_h_, "x", stride_w_);
  } else {
    XTRAIN_CHECK(pad_h_ < kernel_h_ && pad_w_ < kernel_w_, where(), ": pad ", pad_h_, "x", pad_w_,
                 " must be smaller than the kernel ", kernel_h_, "x", kernel_w_);
  }
}

void PoolingLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& input = *bottom[0];
  XTRAIN_CHECK(input.num_axes() == 4, where(),
               ": the input must have 4 axes (num, channels, "
               "height, width), got ",
               input.shape_string());
  const int height = input.shape(2);
  const int width = input.shape(3);
  if (global_) {
    kernel_h_ = height;
    kernel_w_ = width;
  }
  const bool any_padding = pad_h_ > 0 || pad_w_ > 0;
  const bool round_up = param_.pooling_param().round_mode() == PoolingParameter::CEIL;
  const int pooled_h = pooled_size(height, kernel_h_, pad_h_, stride_h_, any_padding, round_up);
  const int pooled_w = pooled_size(width, kernel_w_, pad_w_, stride_w_, any_padding, round_up);
  XTRAIN_CHECK(pooled_h > 0 && pooled_w > 0, where(), ": the kernel ", kernel_h_, "x", kernel_w_,
               " with pad ", pad_h_, "x", pad_w_, " and stride ", stride_h_, "x", stride_w_,
               " does not fit the input ", input.shape_string(),
               "; use a smaller kernel or more padding");
  XTRAIN_ASSERT(!any_padding || ((pooled_h - 1) * stride_h_ < height + pad_h_ &&
                                 (pooled_w - 1) * stride_w_ < width + pad_w_));
  channels_of_input_ = input.shape(1);
  geometry_ = {input.shape(0) * input.shape(1),
               height,
               width,
               kernel_h_,
               kernel_w_,
               pad_h_,
               pad_w_,
               stride_h_,
               stride_w_,
               pooled_h,
               pooled_w};

  const std::vector<int> top_shape = {input.shape(0), input.shape(1), pooled_h, pooled_w};
  top[0]->reshape(top_shape);
  if (top.size() > 1) top[1]->reshape(top_shape);
  mask_is_top_ = top.size() > 1;
#ifdef XTRAIN_USE_CUDA
  if (device().is_gpu()) {
    reshape_gpu_state(top[0]->count());
    return;
  }
#endif
  if (method_ == PoolingParameter::MAX && !mask_is_top_) max_index_.resize(top[0]->count());
}

#ifdef XTRAIN_USE_CUDA
void PoolingLayer::reshape_gpu_state(std::size_t outputs) {
  if (!gpu_) gpu_ = std::make_unique<GpuState>();
  GpuState& state = *gpu_;
  state.cudnn_average = method_ == PoolingParameter::AVE && geometry_.planes > 0 &&
                        cudnn_average_pooling_is_caffes(geometry_);
  if (state.cudnn_average) {
    const int num = geometry_.planes / channels_of_input_;
    state.pooling.set(CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, geometry_.kernel_h,
                      geometry_.kernel_w, geometry_.pad_h, geometry_.pad_w, geometry_.stride_h,
                      geometry_.stride_w);
    state.input.set(num, channels_of_input_, geometry_.height, geometry_.width);
    state.output.set(num, channels_of_input_, geometry_.pooled_h, geometry_.pooled_w);
  }
  const std::size_t bytes = outputs * sizeof(int);
  if (method_ == PoolingParameter::MAX && !mask_is_top_ &&
      (!state.max_index || state.max_index->size() < bytes)) {
    state.max_index = std::make_unique<SyncedMemory>(bytes);
  }
}

void PoolingLayer::forward_gpu(const BlobVec& bottom, const BlobVec& top) {
  if (!gpu_) reshape_gpu_state(top[0]->count());  // the device was set after reshape
  const float* input = bottom[0]->gpu_data();
  float* output = top[0]->mutable_gpu_data();
  if (method_ == PoolingParameter::MAX) {
    float* mask_top = top.size() > 1 ? top[1]->mutable_gpu_data() : nullptr;
    int* mask = mask_top ? nullptr : static_cast<int*>(gpu_->max_index->mutable_gpu_data());
    cuda::max_pool_forward_gpu(geometry_, input, output, mask_top, mask);
  } else if (gpu_->cudnn_average) {
    XTRAIN_CUDNN_CHECK(cudnnPoolingForward(cuda::cudnn_handle(), gpu_->pooling.get(),
                                           cuda::cudnn_one(), gpu_->input.get(), input,
                                           cuda::cudnn_zero(), gpu_->output.get(), output));
  } else {
    cuda::average_pool_forward_gpu(geometry_, input, output);
  }
}

void PoolingLayer::backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  const float* output_diff = top[0]->gpu_diff();
  float* input_diff = bottom[0]->mutable_gpu_diff();
  if (method_ == PoolingParameter::MAX) {
    const float* mask_top = top.size() > 1 ? top[1]->gpu_data() : nullptr;
    const int* mask = mask_top ? nullptr : static_cast<const int*>(gpu_->max_index->gpu_data());
    cuda::max_pool_backward_gpu(geometry_, output_diff, mask_top, mask, input_diff);
  } else if (gpu_->cudnn_average) {
    // Average pooling's gradient does not depend on x and y; the API takes
    // them anyway.
    XTRAIN_CUDNN_CHECK(cudnnPoolingBackward(
        cuda::cudnn_handle(), gpu_->pooling.get(), cuda::cudnn_one(), gpu_->output.get(),
        top[0]->gpu_data(), gpu_->output.get(), output_diff, gpu_->input.get(),
        bottom[0]->gpu_data(), cuda::cudnn_zero(), gpu_->input.get(), input_diff));
  } else {
    cuda::average_pool_backward_gpu(geometry_, output_diff, input_diff);
  }
}
#endif

bool PoolingLayer::reads_channel_blocked_bottom(int bottom_index) const {
  (void)bottom_index;
  return !mask_is_top_;
}

bool PoolingLayer::can_write_channel_blocked_top(int top_index,
                                                 const std::vector<bool>& blocked_bottoms) const {
  return top_index == 0 && !mask_is_top_ && blocked_bottoms[0];
}

void PoolingLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  forward_was_blocked_ = !mask_is_top_ && bottom[0]->data_layout() == MemoryLayout::kChannelBlocked;
  if (forward_was_blocked_) {
    const int channels = bottom[0]->shape(1);
    const bool output_blocked = writes_channel_blocked_top(0) && top[0]->can_be_channel_blocked();
    forward_output_layout_ = output_blocked ? MemoryLayout::kChannelBlocked : MemoryLayout::kPlain;
    const float* input = bottom[0]->cpu_data_in(MemoryLayout::kChannelBlocked);
    float* output = top[0]->overwrite_cpu_data_in(forward_output_layout_);
    if (method_ == PoolingParameter::MAX) {
      max_pool_forward_blocked(geometry_, channels, input, output, max_index_.data(),
                               output_blocked);
    } else {
      average_pool_forward_blocked(geometry_, channels, input, output, output_blocked);
    }
    return;
  }
  const float* input = bottom[0]->cpu_data();
  float* output = top[0]->mutable_cpu_data();
  if (method_ == PoolingParameter::MAX) {
    float* mask_top = top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr;
    max_pool_forward(geometry_, input, output, mask_top, mask_top ? nullptr : max_index_.data());
  } else {
    average_pool_forward(geometry_, input, output);
  }
}

void PoolingLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (forward_was_blocked_) {
    const int channels = bottom[0]->shape(1);
    const bool output_blocked = forward_output_layout_ == MemoryLayout::kChannelBlocked;
    const float* output_diff = top[0]->cpu_diff_in(forward_output_layout_);
    float* input_diff = bottom[0]->overwrite_cpu_diff_in(MemoryLayout::kChannelBlocked);
    if (method_ == PoolingParameter::MAX) {
      max_pool_backward_blocked(geometry_, channels, output_diff, max_index_.data(), input_diff,
                                output_blocked);
    } else {
      average_pool_backward_blocked(geometry_, channels, output_diff, input_diff, output_blocked);
    }
    return;
  }
  const float* output_diff = top[0]->cpu_diff();
  float* input_diff = bottom[0]->mutable_cpu_diff();
  if (method_ == PoolingParameter::MAX) {
    const float* mask_top = top.size() > 1 ? top[1]->cpu_data() : nullptr;
    max_pool_backward(geometry_, output_diff, mask_top, max_index_.data(), input_diff);
  } else {
    average_pool_backward(geometry_, output_diff, input_diff);
  }
}

void register_pooling_layer(LayerRegistry& registry) {
  add_layer<PoolingLayer>(registry, "Pooling");
}

}  // namespace xtrain

#include "layers/pooling_layer.hpp"

#include "layers/builtin_layers.hpp"
#include "layers/pooling_blocked_kernels.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {

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
  const int pooled_h = pooled_size(height, kernel_h_, pad_h_, stride_h_, any_padding);
  const int pooled_w = pooled_size(width, kernel_w_, pad_w_, stride_w_, any_padding);
  XTRAIN_CHECK(pooled_h > 0 && pooled_w > 0, where(), ": the kernel ", kernel_h_, "x", kernel_w_,
               " with pad ", pad_h_, "x", pad_w_, " and stride ", stride_h_, "x", stride_w_,
               " does not fit the input ", input.shape_string(),
               "; use a smaller kernel or more padding");
  XTRAIN_ASSERT(!any_padding || ((pooled_h - 1) * stride_h_ < height + pad_h_ &&
                                 (pooled_w - 1) * stride_w_ < width + pad_w_));
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
  if (method_ == PoolingParameter::MAX && !mask_is_top_) max_index_.resize(top[0]->count());
}

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

#include "layers/pooling_layer.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "layers/builtin_layers.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

// Caffe's ceil-mode output size, in float as Caffe computes it. When the
// layer has padding on either axis, the last window on each axis must start
// before input + pad. (Without any padding Caffe keeps a last window that can
// start past the input when stride > kernel; it comes out empty: -FLT_MAX for
// MAX, 0 or NaN for AVE. We keep that too, as trained nets rely on shapes.)
int pooled_size(int input, int kernel, int pad, int stride, bool any_padding) {
  int pooled =
      static_cast<int>(std::ceil(static_cast<float>(input + 2 * pad - kernel) / stride)) + 1;
  if (any_padding && (pooled - 1) * stride >= input + pad) --pooled;
  return pooled;
}

// One window along one axis: [begin, end) clipped to the image, and the
// extent Caffe's average pooling divides by (clipped to input + pad only).
struct Window {
  int begin;
  int end;
  int divisor_extent;
};

Window window(int index, int kernel, int pad, int stride, int input) {
  const int start = index * stride - pad;
  const int padded_end = std::min(start + kernel, input + pad);
  return {std::max(start, 0), std::min(padded_end, input), padded_end - start};
}

}  // namespace

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
  planes_ = input.shape(0) * input.shape(1);
  height_ = input.shape(2);
  width_ = input.shape(3);
  if (global_) {
    kernel_h_ = height_;
    kernel_w_ = width_;
  }
  const bool any_padding = pad_h_ > 0 || pad_w_ > 0;
  pooled_h_ = pooled_size(height_, kernel_h_, pad_h_, stride_h_, any_padding);
  pooled_w_ = pooled_size(width_, kernel_w_, pad_w_, stride_w_, any_padding);
  XTRAIN_CHECK(pooled_h_ > 0 && pooled_w_ > 0, where(), ": the kernel ", kernel_h_, "x", kernel_w_,
               " with pad ", pad_h_, "x", pad_w_, " and stride ", stride_h_, "x", stride_w_,
               " does not fit the input ", input.shape_string(),
               "; use a smaller kernel or more padding");
  XTRAIN_ASSERT(!any_padding || ((pooled_h_ - 1) * stride_h_ < height_ + pad_h_ &&
                                 (pooled_w_ - 1) * stride_w_ < width_ + pad_w_));

  const std::vector<int> top_shape = {input.shape(0), input.shape(1), pooled_h_, pooled_w_};
  top[0]->reshape(top_shape);
  if (top.size() > 1) top[1]->reshape(top_shape);
  if (method_ == PoolingParameter::MAX && top.size() == 1) max_index_.resize(top[0]->count());
}

void PoolingLayer::forward_cpu(const BlobVec& bottom, const BlobVec& top) {
  if (method_ == PoolingParameter::MAX) {
    forward_max(bottom, top);
  } else {
    forward_average(bottom, top);
  }
}

void PoolingLayer::backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                                const BlobVec& bottom) {
  if (!propagate_down[0]) return;
  if (method_ == PoolingParameter::MAX) {
    backward_max(top, bottom);
  } else {
    backward_average(top, bottom);
  }
}

void PoolingLayer::forward_max(const BlobVec& bottom, const BlobVec& top) {
  const float* input = bottom[0]->cpu_data();
  float* output = top[0]->mutable_cpu_data();
  float* mask_top = top.size() > 1 ? top[1]->mutable_cpu_data() : nullptr;
  int* mask = mask_top ? nullptr : max_index_.data();
  const int plane = height_ * width_;
  for (int p = 0; p < planes_; ++p, input += plane) {
    for (int y = 0; y < pooled_h_; ++y) {
      const Window rows = window(y, kernel_h_, pad_h_, stride_h_, height_);
      for (int x = 0; x < pooled_w_; ++x) {
        const Window cols = window(x, kernel_w_, pad_w_, stride_w_, width_);
        // Caffe starts from -FLT_MAX and keeps the first of equal maxima.
        float best = -FLT_MAX;
        int best_index = -1;
        for (int h = rows.begin; h < rows.end; ++h) {
          for (int w = cols.begin; w < cols.end; ++w) {
            const int index = h * width_ + w;
            if (input[index] > best) {
              best = input[index];
              best_index = index;
            }
          }
        }
        *output++ = best;
        if (mask_top) {
          *mask_top++ = static_cast<float>(best_index);
        } else {
          *mask++ = best_index;
        }
      }
    }
  }
}

void PoolingLayer::forward_average(const BlobVec& bottom, const BlobVec& top) {
  const float* input = bottom[0]->cpu_data();
  float* output = top[0]->mutable_cpu_data();
  const int plane = height_ * width_;
  for (int p = 0; p < planes_; ++p, input += plane) {
    for (int y = 0; y < pooled_h_; ++y) {
      const Window rows = window(y, kernel_h_, pad_h_, stride_h_, height_);
      for (int x = 0; x < pooled_w_; ++x) {
        const Window cols = window(x, kernel_w_, pad_w_, stride_w_, width_);
        float sum = 0;
        for (int h = rows.begin; h < rows.end; ++h) {
          for (int w = cols.begin; w < cols.end; ++w) sum += input[h * width_ + w];
        }
        *output++ = sum / (rows.divisor_extent * cols.divisor_extent);
      }
    }
  }
}

void PoolingLayer::backward_max(const BlobVec& top, const BlobVec& bottom) {
  const float* output_diff = top[0]->cpu_diff();
  const float* mask_top = top.size() > 1 ? top[1]->cpu_data() : nullptr;
  const int* mask = max_index_.data();
  float* input_diff = bottom[0]->mutable_cpu_diff();
  std::fill(input_diff, input_diff + bottom[0]->count(), 0.0f);
  const int plane = height_ * width_;
  const int pooled_plane = pooled_h_ * pooled_w_;
  for (int p = 0; p < planes_; ++p, input_diff += plane) {
    for (int i = 0; i < pooled_plane; ++i) {
      const int index = mask_top ? static_cast<int>(*mask_top++) : *mask++;
      // -1: the window held no value above -FLT_MAX (all -inf or NaN).
      if (index >= 0) input_diff[index] += *output_diff;
      ++output_diff;
    }
  }
}

void PoolingLayer::backward_average(const BlobVec& top, const BlobVec& bottom) {
  const float* output_diff = top[0]->cpu_diff();
  float* input_diff = bottom[0]->mutable_cpu_diff();
  std::fill(input_diff, input_diff + bottom[0]->count(), 0.0f);
  const int plane = height_ * width_;
  for (int p = 0; p < planes_; ++p, input_diff += plane) {
    for (int y = 0; y < pooled_h_; ++y) {
      const Window rows = window(y, kernel_h_, pad_h_, stride_h_, height_);
      for (int x = 0; x < pooled_w_; ++x) {
        const Window cols = window(x, kernel_w_, pad_w_, stride_w_, width_);
        const float share = *output_diff++ / (rows.divisor_extent * cols.divisor_extent);
        for (int h = rows.begin; h < rows.end; ++h) {
          for (int w = cols.begin; w < cols.end; ++w) input_diff[h * width_ + w] += share;
        }
      }
    }
  }
}

void register_pooling_layer(LayerRegistry& registry) {
  add_layer<PoolingLayer>(registry, "Pooling");
}

}  // namespace xtrain

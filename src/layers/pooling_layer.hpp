// Pooling (Caffe type "Pooling"): max or average over 2-D windows of each
// channel of an (N, C, H, W) input.
//
// Window (y, x) covers rows [y*sh - ph, y*sh - ph + kh) and the like for
// columns. Caffe 1.0 rounds the output size UP (round_mode CEIL, the
// default):
//   pooled = ceil((in + 2*pad - k) / stride) + 1,
// and, with padding, drops the last window if it would start at or past
// in + pad (every window must start inside the image or its left padding).
// round_mode FLOOR (Caffe master; PyTorch's and ONNX's default) rounds down
// instead: only windows that fit the padded input.
//   MAX: top = the largest input in the window (clipped to the image); an
//        optional second top holds its index y*W + x within the channel, and
//        backward routes each top gradient to that input.
//   AVE: top = (sum of the inputs in the window clipped to the image) /
//        pool_size, where pool_size is the size of the window clipped to the
//        padded image [-pad, in + pad), not to the image: padding cells
//        count in the divisor as zeros, the part of a ceil-mode window that
//        hangs past the padding does not. Backward spreads
//        top_diff / pool_size over the same inputs.
// global_pooling makes the window the whole input (pad 0, stride 1).
//
// The kernels (a reference and a fast, parallel one) are in
// pooling_kernels.hpp. On a GPU: AVE through cuDNN where its result is
// Caffe's (see cudnn_average_pooling_is_caffes), our own kernels
// (cuda/pooling_gpu_kernels.hpp) for MAX and the other AVE geometries.
#pragma once

#include <memory>
#include <vector>

#include "core/engine_hooks.hpp"
#include "layers/pooling_kernels.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

// Whether cuDNN's average pooling (CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)
// computes exactly Caffe's AVE for geometry `g`: true when, on both axes, the
// padded input holds the kernel (in + 2p >= k, p < k) and Caffe's ceil-mode
// output size equals cuDNN's floor((in + 2p - k) / s) + 1. Then every window
// y starts at y*s - p >= -p and, as y <= (in + 2p - k) / s, ends at
// y*s - p + k <= in + p: no window hangs past the padded input, so Caffe's
// divisor (the window clipped to [-p, in + p)) is the whole k_h * k_w, which
// is what cuDNN divides by, and both sum the same inputs (padding adds 0).
// Otherwise Caffe has a last, clipped window that cuDNN does not compute
// (cuDNN sizes its output by the floor formula).
bool cudnn_average_pooling_is_caffes(const PoolingGeometry& g);

class PoolingLayer : public Layer, public EngineHooks {
 public:
  explicit PoolingLayer(const LayerParameter& param);
  ~PoolingLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Pooling"; }
  int exact_num_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }
  // MAX may output the argmax mask as a second top.
  int max_top_blobs() const override {
    return param_.pooling_param().pool() == PoolingParameter::MAX ? 2 : 1;
  }

  // A channel-blocked bottom is pooled in that layout (one 16-channel vector
  // per pixel, pooling_blocked_kernels.hpp), unless the argmax mask is a top
  // (a user-visible plain blob).
  bool reads_channel_blocked_bottom(int bottom_index) const override;
  bool can_write_channel_blocked_top(int top_index,
                                     const std::vector<bool>& blocked_bottoms) const override;
  std::size_t buffer_bytes() const override { return max_index_.capacity() * sizeof(int); }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef XTRAIN_USE_CUDA
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif

 private:
  PoolingParameter::PoolMethod method_ = PoolingParameter::MAX;
  bool global_ = false;
  int kernel_h_ = 0;
  int kernel_w_ = 0;
  int pad_h_ = 0;
  int pad_w_ = 0;
  int stride_h_ = 1;
  int stride_w_ = 1;

  PoolingGeometry geometry_;  // the kernel, pad and stride above, and the shapes
  int channels_of_input_ = 0;
  // The argmax of each output when there is no mask top.
  std::vector<int> max_index_;
  bool mask_is_top_ = false;
  // How the last forward pass ran; backward runs the same way (MAX's argmax
  // indices are stored in the output's order).
  bool forward_was_blocked_ = false;
  MemoryLayout forward_output_layout_ = MemoryLayout::kPlain;
#ifdef XTRAIN_USE_CUDA
  // The cuDNN descriptors and the device argmax (defined in pooling_layer.cpp).
  struct GpuState;
  std::unique_ptr<GpuState> gpu_;
  void reshape_gpu_state(std::size_t outputs);
#endif
};

}  // namespace xtrain

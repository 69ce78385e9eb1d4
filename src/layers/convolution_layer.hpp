// Convolution (Caffe type "Convolution"): 2-D cross-correlation with learned
// filters, optionally in groups.
//
// For each image, with the input channels split into `group` equal groups and
// the num_output filters likewise,
//   top[o, y, x] = bias[o] + sum over c in group(o), i < kh, j < kw of
//                  weight[o, c, i, j] * bottom[c, y*sh - ph + i*dh, x*sw - pw + j*dw]
// (bottom reads as 0 outside the image), and
//   out = (in + 2*pad - (dilation*(k-1) + 1)) / stride + 1   (integer division).
// Blobs: weight (num_output, channels/group, kh, kw), bias (num_output).
//
// Computed by oneDNN where that is faster, else by im2col + GEMM (see
// convolution_engine.hpp; XTRAIN_CONV_IMPL=gemm forces the latter). Several
// bottoms of one shape give as many tops, sharing weights. Backward adds the
// weight and bias gradients into the param diffs (Caffe accumulates them; the
// solver clears them) and overwrites the bottom diff.
#pragma once

#include <vector>

#include "layers/base_convolution_layer.hpp"

namespace xtrain {

class ConvolutionLayer : public BaseConvolutionLayer {
 public:
  explicit ConvolutionLayer(const LayerParameter& param) : BaseConvolutionLayer(param) {}

  const char* type() const override { return "Convolution"; }
  // Backward needs the top's gradient and the bottom's values, not the top's.
  bool backward_touches_top_data(int) const override { return false; }

 protected:
  bool reverses_convolution() const override { return false; }
  int output_size(int input, int kernel_extent, int pad, int stride) const override {
    return (input + 2 * pad - kernel_extent) / stride + 1;
  }

  // Channel-blocked activations (see Layer): oneDNN computes in that layout,
  // so a blocked bottom or top saves it a reorder.
  bool reads_channel_blocked_bottom(int bottom_index) const override;
  bool can_write_channel_blocked_top(int top_index,
                                     const std::vector<bool>& blocked_bottoms) const override;

  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#ifdef XTRAIN_USE_CUDA
  // cuDNN (see base_convolution_layer.hpp): bias by cudnnAddTensor, its
  // gradient by cudnnConvolutionBackwardBias, both parameter gradients
  // accumulated (beta = 1), the bottom gradient overwritten.
  void forward_gpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;
#endif
};

}  // namespace xtrain

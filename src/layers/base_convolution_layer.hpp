// What Convolution and Deconvolution share: reading convolution_param, the
// learned filters, and the three matrix products of a 2-D convolution on one
// image, each done group by group on the im2col columns (see im2col.hpp).
//
// Both layers are described by a "convolution view": a cross-correlation from
// conv_in channels on a conv_in image to conv_out channels on a conv_out
// image, with the geometry (kernel, pad, stride, dilation) read from the
// parameter:
//   Convolution:    conv_in = the bottom, conv_out = the top;
//   Deconvolution:  conv_in = the top,    conv_out = the bottom (its forward is
//                   the convolution's input gradient, and vice versa).
// The weights are (conv_out channels, conv_in channels / group, kh, kw), which
// is (num_output, C / group, kh, kw) for Convolution and
// (C, num_output / group, kh, kw) for Deconvolution, as in Caffe; the bias is
// (num_output) and is added over the top's pixels.
//
// The products, per image and per group g:
//   convolve:          conv_out_g  = W_g * columns(conv_in)_g
//   convolve_adjoint:  conv_in     = col2im(W_g^T * conv_out_g)
//   weight_gradient:   dW_g       += conv_out_diff_g * columns(conv_in)_g^T
// A 1x1 kernel with stride 1 and no padding uses the image as its columns.
// Parameter gradients accumulate into the diffs (the solver clears them).
#pragma once

#include <vector>

#include "layers/im2col.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class BaseConvolutionLayer : public Layer {
 public:
  explicit BaseConvolutionLayer(const LayerParameter& param) : Layer(param) {}

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  int min_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }
  bool equal_num_bottom_top_blobs() const override { return true; }

 protected:
  // True for Deconvolution: the top is the convolution view's input.
  virtual bool reverses_convolution() const = 0;
  // The top's size along one spatial axis for a bottom of size `input` (may
  // be <= 0 when the geometry does not fit; reshape() reports it).
  virtual int output_size(int input, int kernel_extent, int pad, int stride) const = 0;

  // columns_ready: the last call was weight_gradient() on the same conv_in,
  // so its columns can be reused (saves one im2col).
  void convolve(const float* conv_in, const float* weights, float* conv_out,
                bool columns_ready = false);
  void convolve_adjoint(const float* conv_out, const float* weights, float* conv_in);
  void weight_gradient(const float* conv_in, const float* conv_out_diff, float* weight_diff);
  // output[o, p] += bias[o] over the top's pixels.
  void add_bias(const float* bias, float* output);
  // bias_diff[o] += sum over the top's pixels of output_diff[o, p].
  void bias_gradient(const float* output_diff, float* bias_diff);

  bool bias_term() const { return bias_term_; }
  int num() const { return num_; }
  std::size_t bottom_dim() const { return bottom_dim_; }
  std::size_t top_dim() const { return top_dim_; }

 private:
  void read_geometry();
  void setup_params(int conv_in_channels, int conv_out_channels);
  // The columns of one conv_in image: the image itself for a 1x1 kernel.
  const float* columns_of(const float* conv_in);

  // Fixed at setup.
  int channel_axis_ = 1;
  int channels_ = 0;  // of the bottom
  int num_output_ = 0;
  int group_ = 1;
  bool bias_term_ = true;
  bool is_1x1_ = false;
  int conv_out_channels_ = 0;
  int kernel_dim_ = 0;       // (conv_in channels / group) * kh * kw
  Im2colGeometry geometry_;  // of the conv_in image; height/width set in reshape()

  // Follow the input shape.
  int num_ = 0;               // images: product of the axes before channel_axis_
  int conv_out_spatial_ = 0;  // pixels of the conv_out image
  int top_spatial_ = 0;       // pixels of the top image
  std::size_t bottom_dim_ = 0;
  std::size_t top_dim_ = 0;
  // Offsets of one group's block in the weights, the columns and conv_out.
  std::size_t weight_step_ = 0;
  std::size_t column_step_ = 0;
  std::size_t conv_out_step_ = 0;
  std::vector<float> columns_;  // (conv_in C * kh * kw) x conv_out_spatial_
  std::vector<float> ones_;     // top_spatial_ ones, to add the bias by gemm
};

}  // namespace xtrain

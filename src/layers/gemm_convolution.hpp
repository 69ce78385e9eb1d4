// GemmConvolution: the reference convolution engine. Image by image, each
// product done group by group on the im2col columns (see im2col.hpp), from
// conv_in (the bottom) to conv_out (the top):
//   convolve:          conv_out_g  = W_g * columns(conv_in)_g
//   convolve_adjoint:  conv_in     = col2im(W_g^T * conv_out_g)
//   weight_gradient:   dW_g       += conv_out_diff_g * columns(conv_in)_g^T
// A 1x1 kernel with stride 1 and no padding uses the image as its columns.
// (Laying several small images side by side in one wider product measured
// slower with OpenBLAS, so we multiply per image as Caffe does.)
#pragma once

#include <string>
#include <vector>

#include "layers/channel_bias.hpp"
#include "layers/convolution_engine.hpp"

namespace xtrain {

class GemmConvolution final : public ConvolutionEngine {
 public:
  explicit GemmConvolution(const ConvolutionShape& shape);

  static constexpr const char* kName = "gemm";
  std::string name() const override { return kName; }
  const ConvolutionShape& shape() const override { return shape_; }
  std::size_t buffer_bytes() const override { return columns_.capacity() * sizeof(float); }

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override;
  void backward_data(const float* top_diff, const float* weights, float* bottom_diff) override;
  void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                        float* bias_diff) override;

 private:
  // One image each.
  void convolve(const float* conv_in, const float* weights, float* conv_out);
  void convolve_adjoint(const float* conv_out, const float* weights, float* conv_in);
  void weight_gradient(const float* conv_in, const float* conv_out_diff, float* weight_diff);
  // The columns of one conv_in image: the image itself for a 1x1 kernel.
  const float* columns_of(const float* conv_in);

  ConvolutionShape shape_;
  bool is_1x1_ = false;
  int outputs_per_group_ = 0;
  int kernel_dim_ = 0;        // (conv_in channels / group) * kh * kw
  int conv_out_spatial_ = 0;  // pixels of one conv_out image
  // Offsets of one group's block in the weights, the columns and conv_out.
  std::size_t weight_step_ = 0;
  std::size_t column_step_ = 0;
  std::size_t conv_out_step_ = 0;
  std::vector<float> columns_;  // (conv_in C * kh * kw) x conv_out_spatial_
  ChannelBias bias_;            // over conv_out
};

}  // namespace xtrain

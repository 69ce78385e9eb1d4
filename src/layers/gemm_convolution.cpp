#include "layers/gemm_convolution.hpp"

#include "core/math_functions.hpp"

namespace xtrain {

using math::Transpose;

GemmConvolution::GemmConvolution(const ConvolutionShape& shape) : shape_(shape) {
  const Im2colGeometry& g = shape.geometry;
  // Dilation does not matter for a 1x1 kernel.
  is_1x1_ = g.kernel_h == 1 && g.kernel_w == 1 && g.stride_h == 1 && g.stride_w == 1 &&
            g.pad_h == 0 && g.pad_w == 0;
  outputs_per_group_ = shape.num_output / shape.group;
  kernel_dim_ = g.channels / shape.group * g.kernel_h * g.kernel_w;
  conv_out_spatial_ = shape.out_height() * shape.out_width();
  weight_step_ = static_cast<std::size_t>(outputs_per_group_) * kernel_dim_;
  column_step_ = static_cast<std::size_t>(kernel_dim_) * conv_out_spatial_;
  conv_out_step_ = static_cast<std::size_t>(outputs_per_group_) * conv_out_spatial_;
  if (!is_1x1_) columns_.resize(column_step_ * shape.group);
  if (shape.bias_term) bias_ = ChannelBias(shape.num_output, conv_out_spatial_);
}

void GemmConvolution::forward(const float* bottom, const float* weights, const float* bias,
                              float* top) {
  for (int n = 0; n < shape_.num; ++n) {
    float* image_top = top + n * shape_.output_dim();
    convolve(bottom + n * shape_.input_dim(), weights, image_top);
    if (shape_.bias_term) bias_.add(bias, image_top);
  }
}

void GemmConvolution::backward_data(const float* top_diff, const float* weights,
                                    float* bottom_diff) {
  for (int n = 0; n < shape_.num; ++n) {
    convolve_adjoint(top_diff + n * shape_.output_dim(), weights,
                     bottom_diff + n * shape_.input_dim());
  }
}

void GemmConvolution::backward_weights(const float* bottom, const float* top_diff,
                                       float* weight_diff, float* bias_diff) {
  for (int n = 0; n < shape_.num; ++n) {
    const float* image_top_diff = top_diff + n * shape_.output_dim();
    if (bias_diff && shape_.bias_term) bias_.accumulate_gradient(image_top_diff, bias_diff);
    if (weight_diff) weight_gradient(bottom + n * shape_.input_dim(), image_top_diff, weight_diff);
  }
}

const float* GemmConvolution::columns_of(const float* conv_in) {
  if (is_1x1_) return conv_in;
  im2col(conv_in, shape_.geometry, columns_.data());
  return columns_.data();
}

void GemmConvolution::convolve(const float* conv_in, const float* weights, float* conv_out) {
  const float* columns = columns_of(conv_in);
  for (int g = 0; g < shape_.group; ++g) {
    math::gemm(Transpose::kNo, Transpose::kNo, outputs_per_group_, conv_out_spatial_, kernel_dim_,
               1.0f, weights + g * weight_step_, columns + g * column_step_, 0.0f,
               conv_out + g * conv_out_step_);
  }
}

void GemmConvolution::convolve_adjoint(const float* conv_out, const float* weights,
                                       float* conv_in) {
  float* columns = is_1x1_ ? conv_in : columns_.data();
  for (int g = 0; g < shape_.group; ++g) {
    math::gemm(Transpose::kYes, Transpose::kNo, kernel_dim_, conv_out_spatial_, outputs_per_group_,
               1.0f, weights + g * weight_step_, conv_out + g * conv_out_step_, 0.0f,
               columns + g * column_step_);
  }
  if (!is_1x1_) col2im(columns, shape_.geometry, conv_in);
}

void GemmConvolution::weight_gradient(const float* conv_in, const float* conv_out_diff,
                                      float* weight_diff) {
  const float* columns = columns_of(conv_in);
  for (int g = 0; g < shape_.group; ++g) {
    math::gemm(Transpose::kNo, Transpose::kYes, outputs_per_group_, kernel_dim_, conv_out_spatial_,
               1.0f, conv_out_diff + g * conv_out_step_, columns + g * column_step_, 1.0f,
               weight_diff + g * weight_step_);
  }
}

}  // namespace xtrain

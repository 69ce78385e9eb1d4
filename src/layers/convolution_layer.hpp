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
// Computed image by image as one matrix product per group on the im2col
// columns (see im2col.hpp); a 1x1 kernel with stride 1 and no padding reads
// the image directly. (Laying several small images side by side in one wider
// product measured slower with OpenBLAS, so we multiply per image as Caffe
// does.) Several bottoms of one shape give as many tops, sharing weights.
// Backward adds the weight and bias gradients into the param diffs (Caffe
// accumulates them; the solver clears them) and overwrites the bottom diff.
#pragma once

#include <vector>

#include "layers/im2col.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class ConvolutionLayer : public Layer {
 public:
  explicit ConvolutionLayer(const LayerParameter& param) : Layer(param) {}

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  const char* type() const override { return "Convolution"; }
  int min_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }
  bool equal_num_bottom_top_blobs() const override { return true; }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override;
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override;

 private:
  void read_geometry(const Blob& input);
  void setup_params();

  // One image: output = weights * columns(input), group by group.
  void forward_image(const float* input, const float* weights, float* output);
  // weight_diff += output_diff * columns(input)^T, group by group.
  void accumulate_weight_gradient(const float* input, const float* output_diff, float* weight_diff);
  // input_diff = col2im(weights^T * output_diff).
  void input_gradient(const float* output_diff, const float* weights, float* input_diff);

  // Fixed at setup.
  int channel_axis_ = 1;
  int channels_ = 0;
  int num_output_ = 0;
  int group_ = 1;
  bool bias_term_ = true;
  bool is_1x1_ = false;
  Im2colGeometry geometry_;  // height/width follow the input in reshape()

  // Follow the input shape.
  int num_ = 0;          // images: product of the axes before channel_axis_
  int out_spatial_ = 0;  // out_h * out_w
  int kernel_dim_ = 0;   // (channels / group) * kh * kw
  std::size_t bottom_dim_ = 0;
  std::size_t top_dim_ = 0;
  // Offsets of one group's block in the weights, the columns and the output.
  std::size_t weight_step_ = 0;
  std::size_t column_step_ = 0;
  std::size_t output_step_ = 0;
  std::vector<float> columns_;  // (C*kh*kw) x out_spatial_, one image's im2col
  std::vector<float> ones_;     // out_spatial_ ones, to add the bias by gemm
};

}  // namespace xtrain

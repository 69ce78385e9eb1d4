// CudnnConvolution: one ConvolutionShape (layers/convolution_engine.hpp)
// computed by cuDNN on device arrays, for the GPU paths of Convolution and
// Deconvolution.
//
// Descriptors, all float NCHW:
//   input  x: (num, channels, height, width)                     the view's input
//   output y: (num, num_output, out_height, out_width)           the view's output
//   filter w: (num_output, channels / group, kernel_h, kernel_w) as the weight blob
//   convolution: pad, stride, dilation, CUDNN_CROSS_CORRELATION (no kernel flip,
//                as Caffe), group count `group`, FMA math (no TF32).
//   bias: (1, C, 1, 1), broadcast over the image by cudnnAddTensor.
//
// A layer makes one CudnnConvolution (creating its descriptors) and calls
// set_shape() on each reshape, which re-sets them when the shape changed.
// Each of the three passes (forward, backward data, backward filter) gets its
// algorithm the first time it runs after a new shape, by the process-wide
// settings of xtrain/cudnn_options.hpp: cuDNN's heuristic ranking, or a timed
// search (cudnnFind*AlgorithmEx), in both cases only among algorithms whose
// workspace fits the cap. The workspace is shared by the passes and kept
// across shapes, grown only when a chosen algorithm needs more.
#pragma once

#include <cstddef>
#include <string>

#include "cuda/cudnn_descriptors.hpp"
#include "layers/convolution_engine.hpp"

namespace xtrain::cuda {

class CudnnConvolution {
 public:
  // `where` prefixes log lines and errors.
  explicit CudnnConvolution(std::string where);

  // Re-sets the descriptors and forgets the algorithms if `shape` differs from
  // the current one. Must be called before the passes.
  void set_shape(const ConvolutionShape& shape);
  bool has_shape() const { return has_shape_; }
  const ConvolutionShape& shape() const { return shape_; }

  // y = w * x, plus bias over y's channels when the shape has bias_term.
  // Overwrites y.
  void forward(const float* x, const float* w, const float* bias, float* y);
  // dx = the adjoint of forward (without bias) applied to dy. Overwrites dx.
  void backward_data(const float* dy, const float* w, float* dx);
  // dw += dE/dw for the input x and output gradient dy (Caffe accumulates
  // parameter gradients; the solver clears them).
  void backward_filter(const float* x, const float* dy, float* dw);

  // Which image a per-channel bias runs over: the view's input (Deconvolution's
  // top) or its output (Convolution's top).
  enum class Side { kInput, kOutput };
  // data[n, c, ., .] += bias[c].
  void add_bias(Side side, const float* bias, float* data);
  // bias_diff[c] += sum over n, h, w of diff[n, c, h, w].
  void accumulate_bias_gradient(Side side, const float* diff, float* bias_diff);

 private:
  void choose_forward(const float* x, const float* w, float* y);
  void choose_backward_data(const float* dy, const float* w, float* dx);
  void choose_backward_filter(const float* x, const float* dy);

  std::string where_;
  bool has_shape_ = false;
  bool empty_ = false;  // no values in or out (N = 0): every pass does nothing
  ConvolutionShape shape_;
  DeviceScratch workspace_;

  CudnnTensor input_;
  CudnnTensor output_;
  CudnnTensor input_bias_;
  CudnnTensor output_bias_;
  CudnnFilter filter_;
  CudnnConvolutionDescriptor convolution_;

  bool forward_chosen_ = false;
  bool backward_data_chosen_ = false;
  bool backward_filter_chosen_ = false;
  cudnnConvolutionFwdAlgo_t forward_algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data_algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t backward_filter_algo_ = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  std::size_t forward_workspace_ = 0;
  std::size_t backward_data_workspace_ = 0;
  std::size_t backward_filter_workspace_ = 0;
};

}  // namespace xtrain::cuda

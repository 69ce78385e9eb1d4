// What Convolution and Deconvolution share: reading convolution_param, the
// learned filters, and the engine that computes the convolution.
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
// The arithmetic is a ConvolutionEngine's (convolution_engine.hpp), made for
// the convolution view of each new input shape: oneDNN's where that is
// faster, else im2col + GEMM. Parameter gradients accumulate into the diffs
// (the solver clears them).
//
// On a GPU device the same view is computed by cuDNN instead
// (cuda/cudnn_convolution.hpp; its descriptors are made once and re-set for
// each new input shape); no CPU engine is made there.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/engine_hooks.hpp"
#include "layers/convolution_engine.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

namespace cuda {
class CudnnConvolution;
}  // namespace cuda

class BaseConvolutionLayer : public Layer, public EngineHooks {
 public:
  explicit BaseConvolutionLayer(const LayerParameter& param);
  ~BaseConvolutionLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

  int min_bottom_blobs() const override { return 1; }
  int min_top_blobs() const override { return 1; }
  bool equal_num_bottom_top_blobs() const override { return true; }

  // Which engine computes the current shape ("gemm", "onednn (...)"); the
  // choice is also logged once per shape.
  std::string engine_name() const { return engine_ ? engine_->name() : "none (not set up)"; }

 protected:
  // True for Deconvolution: the top is the convolution view's input.
  virtual bool reverses_convolution() const = 0;
  // The top's size along one spatial axis for a bottom of size `input` (may
  // be <= 0 when the geometry does not fit; reshape() reports it).
  virtual int output_size(int input, int kernel_extent, int pad, int stride) const = 0;

  // The engine for the current input shape (set by reshape()).
  ConvolutionEngine& engine() { return *engine_; }
  const ConvolutionEngine& engine() const { return *engine_; }
  bool has_engine() const { return engine_ != nullptr; }
  // The type the operands of a forward (or backward) call, stored as `type`,
  // must be rounded to before the engine multiplies them
  // (xtrain/precision.hpp): kFloat32 when nothing needs rounding here,
  // because the layer computes in fp32 or the engine's kernels for every
  // pass of the call round to `type` themselves.
  NumberType forward_operands_to_round(NumberType type) const;
  NumberType backward_operands_to_round(NumberType type) const;
  std::size_t buffer_bytes() const override { return engine_ ? engine_->buffer_bytes() : 0; }
#ifdef XTRAIN_USE_CUDA
  // The cuDNN convolution of the current shape (GPU devices; set by reshape()).
  cuda::CudnnConvolution& cudnn() { return *cudnn_; }
#endif
  // Whether the blobs are (num, channels, height, width), the only shape the
  // channel-blocked layout describes.
  bool blobs_are_nchw() const { return channel_axis_ == 1 && geometry_.height > 0; }

  bool bias_term() const { return bias_term_; }
  int num() const { return num_; }
  std::size_t top_dim() const { return top_dim_; }
  int num_output() const { return num_output_; }
  int top_spatial() const { return top_spatial_; }

 private:
  void read_geometry();
  void setup_params(int conv_in_channels, int conv_out_channels);

  // Fixed at setup.
  int channel_axis_ = 1;
  int channels_ = 0;  // of the bottom
  int num_output_ = 0;
  int group_ = 1;
  bool bias_term_ = true;
  int conv_out_channels_ = 0;
  Im2colGeometry geometry_;  // of the conv_in image; height/width set in reshape()

  // Follow the input shape.
  int num_ = 0;          // images: product of the axes before channel_axis_
  int top_spatial_ = 0;  // pixels of the top image
  std::size_t bottom_dim_ = 0;
  std::size_t top_dim_ = 0;
  std::unique_ptr<ConvolutionEngine> engine_;
  // The operand type engine_ was asked for (make_convolution_engine).
  NumberType engine_operands_ = NumberType::kFloat32;
#ifdef XTRAIN_USE_CUDA
  // GPU only: cuDNN's descriptors of the view, its algorithms and workspace.
  std::unique_ptr<cuda::CudnnConvolution> cudnn_;
#endif
};

}  // namespace xtrain

#include "layers/base_convolution_layer.hpp"

#include <initializer_list>
#include <string>

#include "layers/convolution_geometry.hpp"
#include "layers/learnable_blobs.hpp"
#include "xtrain/error.hpp"

#ifdef XTRAIN_USE_CUDA
#include "layers/cudnn_convolution.hpp"
#endif

namespace xtrain {
BaseConvolutionLayer::BaseConvolutionLayer(const LayerParameter& param) : Layer(param) {}

// Out of line: the cuDNN members are complete types only here.
BaseConvolutionLayer::~BaseConvolutionLayer() = default;

void BaseConvolutionLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  (void)top;
  const ConvolutionParameter& conv = param_.convolution_param();
  const Blob& input = *bottom[0];
  XTRAIN_CHECK(conv.axis() >= -input.num_axes() && conv.axis() < input.num_axes(), where(),
               ": axis ", conv.axis(), " is out of range for the input of shape ",
               input.shape_string());
  channel_axis_ = input.canonical_axis_index(conv.axis());
  const int spatial_axes = input.num_axes() - channel_axis_ - 1;
  XTRAIN_CHECK(spatial_axes == 2, where(), ": the input ", input.shape_string(), " has ",
               spatial_axes, " spatial axes after the channel axis ", channel_axis_,
               "; only 2-D convolution is implemented (N-d convolution is not supported yet)");

  read_geometry();

  channels_ = input.shape(channel_axis_);
  XTRAIN_CHECK(conv.num_output() > 0, where(), ": convolution_param.num_output must be > 0");
  num_output_ = static_cast<int>(conv.num_output());
  XTRAIN_CHECK(conv.group() > 0, where(), ": group must be > 0");
  group_ = static_cast<int>(conv.group());
  XTRAIN_CHECK(channels_ % group_ == 0, where(), ": the input has ", channels_, " channels (shape ",
               input.shape_string(), "), which group ", group_,
               " does not divide; channels must be a multiple of group");
  XTRAIN_CHECK(num_output_ % group_ == 0, where(), ": num_output ", num_output_,
               " is not a multiple of group ", group_);
  bias_term_ = conv.bias_term();
  if (reverses_convolution()) {
    setup_params(num_output_, channels_);
  } else {
    setup_params(channels_, num_output_);
  }
}

void BaseConvolutionLayer::read_geometry() {
  const Im2colGeometry read = read_convolution_geometry(param_.convolution_param(), where());
  geometry_.kernel_h = read.kernel_h;
  geometry_.kernel_w = read.kernel_w;
  geometry_.pad_h = read.pad_h;
  geometry_.pad_w = read.pad_w;
  geometry_.stride_h = read.stride_h;
  geometry_.stride_w = read.stride_w;
  geometry_.dilation_h = read.dilation_h;
  geometry_.dilation_w = read.dilation_w;
}

void BaseConvolutionLayer::setup_params(int conv_in_channels, int conv_out_channels) {
  const ConvolutionParameter& conv = param_.convolution_param();
  geometry_.channels = conv_in_channels;
  conv_out_channels_ = conv_out_channels;
  const std::vector<int> weight_shape = {conv_out_channels, conv_in_channels / group_,
                                         geometry_.kernel_h, geometry_.kernel_w};
  const std::vector<int> bias_shape = {num_output_};
  std::vector<LearnableBlobSpec> specs = {
      {"weight", weight_shape, &conv.weight_filler(), "weight_filler"}};
  if (bias_term_) specs.push_back({"bias", bias_shape, &conv.bias_filler(), "bias_filler"});
  const char* meaning =
      reverses_convolution()
          ? "(input channels, num_output / group, kernel_h, kernel_w); the weights do not match "
            "num_output, group, kernel size or the input channels"
          : "(num_output, input channels / group, kernel_h, kernel_w); the weights do not match "
            "num_output, group, kernel size or the input channels";
  setup_learnable_blobs(where(), specs, meaning, &blobs_, random());
  for (std::size_t i = 0; i < blobs_.size(); ++i) {
    set_param_propagate_down(static_cast<int>(i), true);
  }
}

void BaseConvolutionLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  const Blob& input = *bottom[0];
  XTRAIN_CHECK(input.num_axes() == channel_axis_ + 3, where(), ": the input ", input.shape_string(),
               " must keep the ", channel_axis_ + 3, " axes it was set up with");
  for (std::size_t i = 1; i < bottom.size(); ++i) {
    XTRAIN_CHECK(bottom[i]->shape() == input.shape(), where(),
                 ": all bottoms must have one "
                 "shape, but bottom 0 is ",
                 input.shape_string(), " and bottom ", i, " is ", bottom[i]->shape_string());
  }
  XTRAIN_CHECK(input.shape(channel_axis_) == channels_, where(), ": the input ",
               input.shape_string(), " has ", input.shape(channel_axis_),
               " channels, but the weights ", blobs_[0]->shape_string(), " (group ", group_,
               ") expect ", channels_);

  const int in_h = input.shape(channel_axis_ + 1);
  const int in_w = input.shape(channel_axis_ + 2);
  const int out_h =
      output_size(in_h, geometry_.kernel_extent_h(), geometry_.pad_h, geometry_.stride_h);
  const int out_w =
      output_size(in_w, geometry_.kernel_extent_w(), geometry_.pad_w, geometry_.stride_w);
  XTRAIN_CHECK(out_h > 0 && out_w > 0, where(), ": the kernel does not fit the input ",
               input.shape_string(), ": kernel ", geometry_.kernel_h, "x", geometry_.kernel_w,
               " (dilated extent ", geometry_.kernel_extent_h(), "x", geometry_.kernel_extent_w(),
               "), pad ", geometry_.pad_h, "x", geometry_.pad_w, ", stride ", geometry_.stride_h,
               "x", geometry_.stride_w, " give an output of ", out_h, "x", out_w,
               reverses_convolution() ? "; use less padding"
                                      : "; use a smaller kernel or dilation, or more padding");

  std::vector<int> top_shape(input.shape().begin(), input.shape().begin() + channel_axis_);
  top_shape.push_back(num_output_);
  top_shape.push_back(out_h);
  top_shape.push_back(out_w);
  for (Blob* output : top) output->reshape(top_shape);

  if (reverses_convolution()) {
    geometry_.height = out_h;
    geometry_.width = out_w;
  } else {
    geometry_.height = in_h;
    geometry_.width = in_w;
  }
  top_spatial_ = out_h * out_w;
  num_ = static_cast<int>(input.count(0, channel_axis_));
  bottom_dim_ = input.count(channel_axis_);
  top_dim_ = static_cast<std::size_t>(num_output_) * top_spatial_;

  ConvolutionShape view;
  view.num = num_;
  view.geometry = geometry_;
  view.num_output = conv_out_channels_;
  view.group = group_;
  // Deconvolution's bias is on its top, the view's input: the layer adds it.
  view.bias_term = bias_term_ && !reverses_convolution();
  XTRAIN_ASSERT(view.input_dim() == (reverses_convolution() ? top_dim_ : bottom_dim_) &&
                    view.output_dim() == (reverses_convolution() ? bottom_dim_ : top_dim_),
                where());
#ifdef XTRAIN_USE_CUDA
  if (device().is_gpu()) {
    if (!cudnn_) cudnn_ = std::make_unique<cuda::CudnnConvolution>(where());
    cudnn_->set_shape(view);  // re-sets the descriptors when the shape changed
    return;
  }
#endif
  // One engine serves both directions: it multiplies in a 16-bit type
  // itself only when forward and backward agree on it.
  const NumberType engine_operands = precision().forward_type == precision().backward_type
                                         ? precision().forward_type
                                         : NumberType::kFloat32;
  if (!engine_ || engine_->shape() != view || engine_operands_ != engine_operands) {
    engine_.reset();  // free the old engine's buffers first
    engine_ = make_convolution_engine(view, param_.convolution_param(), where(), engine_operands);
    engine_operands_ = engine_operands;
  }
}

namespace {

// `type` unless every pass of the call multiplies in it itself.
NumberType rounding_for(const ConvolutionEngine* engine, NumberType type,
                        std::initializer_list<ConvolutionPass> passes) {
  if (type == NumberType::kFloat32 || engine == nullptr) return type;
  for (ConvolutionPass pass : passes) {
    if (engine->operand_type(pass) != type) return type;
  }
  return NumberType::kFloat32;
}

}  // namespace

NumberType BaseConvolutionLayer::forward_operands_to_round(NumberType type) const {
  // Deconvolution's forward is the engine's backward-data pass.
  const ConvolutionPass pass =
      reverses_convolution() ? ConvolutionPass::kBackwardData : ConvolutionPass::kForward;
  return rounding_for(device().is_gpu() ? nullptr : engine_.get(), type, {pass});
}

NumberType BaseConvolutionLayer::backward_operands_to_round(NumberType type) const {
  const ConvolutionEngine* engine = device().is_gpu() ? nullptr : engine_.get();
  // Deconvolution's backward runs the engine's forward and weight passes.
  if (reverses_convolution()) {
    return rounding_for(engine, type,
                        {ConvolutionPass::kForward, ConvolutionPass::kBackwardWeights});
  }
  return rounding_for(engine, type,
                      {ConvolutionPass::kBackwardData, ConvolutionPass::kBackwardWeights});
}

}  // namespace xtrain

#include "layers/onednn_convolution.hpp"

#if XTRAIN_HAVE_ONEDNN

#include <array>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "layers/onednn_boundary.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using namespace onednn;  // the boundaries, scratch roles and engine
using dnnl::memory;
using Tag = memory::format_tag;
using DataType = memory::data_type;
using Arguments = std::unordered_map<int, memory>;

// The channel-blocked desc of an NCHW array, or a zero desc when its channels
// are not a multiple of channel_block() (a blob then never holds that layout).
memory::desc channel_blocked_desc(const memory::dims& dims) {
  if (!channels_can_be_blocked(static_cast<int>(dims[1]))) return memory::desc();
  return memory::desc(dims, DataType::f32, channel_block() == 16 ? Tag::nChw16c : Tag::nChw8c);
}

std::string implementation_of(const dnnl::primitive_desc_base& pd) { return pd.impl_info_str(); }

bool starts_with(const std::string& text, const char* prefix) {
  return text.compare(0, std::strlen(prefix), prefix) == 0;
}

using Pass = ConvolutionPass;

// Measured exceptions to oneDNN's first choice of kernel (2 cores, medians):
// with few input channels (a first layer: LeNet conv1 has 1, CIFAR-10 and
// AlexNet conv1 have 3) its direct AVX-512 backward-data kernel is 3-7x
// slower than its GEMM one (AlexNet conv1 at batch 32: 306 vs 80 ms, CIFAR-10
// quick conv1 at batch 100: 18.6 vs 7.6 ms, LeNet conv1: 5.0 vs 0.74 ms).
const char* preferred_implementation(const ConvolutionShape& shape, Pass pass) {
  const int channels_per_group = shape.geometry.channels / shape.group;
  if (pass == Pass::kBackwardData && channels_per_group <= 4) return "x64:gemm";
  return nullptr;
}

// Measured exceptions to oneDNN's blocked activation layout (2 cores, medians
// of 60 forward + backward calls, ms, blocked vs the one chosen): channel
// counts that are not multiples of 16 are padded to 16 in the blocked layout,
// wasting up to half the arithmetic; channels-last pads nothing: LeNet conv2
// (20->50, 5x5, 12x12, batch 64) 3.51 vs 2.24. A first layer (<= 4 input
// channels) stays blocked: CIFAR-10 conv1 (3->32) 8.0 vs 12.0, LeNet conv1
// (1->20) 0.6 vs 1.0.
// (A 1x1 stride-1 convolution over a large image used to run as one GEMM on
// NCHW, which beat blocked by 15-25% when every convolution reordered its
// activations at the boundary; now that the Net keeps activations blocked
// between layers, blocked wins over the whole net: ResNet-50 b16 1,219 ->
// 1,147 ms, GoogLeNet b16 487 -> 463 ms.)
OnednnConvolutionOptions::Layout measured_best_layout(const ConvolutionShape& shape) {
  using Layout = OnednnConvolutionOptions::Layout;
  const Im2colGeometry& g = shape.geometry;
  const int channels_per_group = g.channels / shape.group;
  const int outputs_per_group = shape.num_output / shape.group;
  const int block = channel_block();
  if (channels_per_group > 4 &&
      (channels_per_group % block != 0 || outputs_per_group % block != 0)) {
    return Layout::kNhwc;
  }
  return Layout::kChosenByOnednn;
}

// Which of oneDNN's implementations to take: the one named exactly `name`, or
// else the first whose name starts with `prefix`, or else oneDNN's first.
struct ImplementationWanted {
  std::string name;
  const char* prefix = nullptr;

  bool empty() const { return name.empty() && prefix == nullptr; }
  bool matches_name(const std::string& implementation) const { return implementation == name; }
  bool matches_prefix(const std::string& implementation) const {
    return prefix != nullptr && starts_with(implementation, prefix);
  }
};

// Walks oneDNN's ordered list of implementations for `desc` to the one
// `wanted` names; keeps the first when there is none. oneDNN's iterator
// points into `desc`, which must outlive the walk.
template <typename PrimitiveDesc, typename OpDesc, typename MakePrimitiveDesc>
PrimitiveDesc choose_implementation(const OpDesc& desc, MakePrimitiveDesc make,
                                    const ImplementationWanted& wanted) {
  if (wanted.empty()) return make(desc);
  for (const bool by_name : {true, false}) {
    if (by_name && wanted.name.empty()) continue;
    PrimitiveDesc pd = make(desc);
    do {
      const std::string implementation = implementation_of(pd);
      if (by_name ? wanted.matches_name(implementation) : wanted.matches_prefix(implementation)) {
        return pd;
      }
    } while (pd.next_impl());
  }
  return make(desc);
}

// Every implementation in oneDNN's list for `desc`, reference kernels left out.
template <typename PrimitiveDesc, typename OpDesc, typename MakePrimitiveDesc>
std::vector<std::string> list_implementations(const OpDesc& desc, MakePrimitiveDesc make) {
  std::vector<std::string> names;
  PrimitiveDesc pd = make(desc);
  do {
    const std::string implementation = implementation_of(pd);
    if (!starts_with(implementation, "ref")) names.push_back(implementation);
  } while (pd.next_impl());
  return names;
}

// oneDNN's descriptions of one convolution shape: the arrays as the caller
// keeps them (plain, or channel-blocked where the channels allow) and the
// three passes' operations with the activations in `layout` inside.
struct OperationDescriptors {
  OperationDescriptors(const ConvolutionShape& shape, OnednnConvolutionOptions::Layout layout,
                       DataType operands = DataType::f32) {
    using Layout = OnednnConvolutionOptions::Layout;
    const Im2colGeometry& g = shape.geometry;
    const memory::dim n = shape.num, c = g.channels, oc = shape.num_output, groups = shape.group;
    const memory::dims src_dims = {n, c, g.height, g.width};
    const memory::dims dst_dims = {n, oc, shape.out_height(), shape.out_width()};
    const memory::dims weight_dims =
        groups == 1 ? memory::dims{oc, c, g.kernel_h, g.kernel_w}
                    : memory::dims{groups, oc / groups, c / groups, g.kernel_h, g.kernel_w};
    src_plain = memory::desc(src_dims, DataType::f32, Tag::nchw);
    dst_plain = memory::desc(dst_dims, DataType::f32, Tag::nchw);
    src_blocked = channel_blocked_desc(src_dims);
    dst_blocked = channel_blocked_desc(dst_dims);
    weights_plain = memory::desc(weight_dims, DataType::f32, groups == 1 ? Tag::oihw : Tag::goihw);
    if (shape.bias_term) bias_plain = memory::desc({oc}, DataType::f32, Tag::x);

    const Tag activations = layout == Layout::kNchw   ? Tag::nchw
                            : layout == Layout::kNhwc ? Tag::nhwc
                                                      : Tag::any;
    // The multiplied arrays in `operands`; what is written (dst, diff_src,
    // the parameter gradients) in f32.
    const memory::desc src(src_dims, operands, activations);
    const memory::desc dst(dst_dims, DataType::f32, activations);
    const memory::desc diff_src(src_dims, DataType::f32, activations);
    const memory::desc diff_dst(dst_dims, operands, activations);
    const memory::desc weights(weight_dims, operands, Tag::any);
    const memory::desc diff_weights(weight_dims, DataType::f32, Tag::any);
    // oneDNN counts dilation from 0 (no gaps). Padding on the right equal to
    // the left: Caffe's floor division drops the surplus, as oneDNN's does.
    const memory::dims strides = {g.stride_h, g.stride_w};
    const memory::dims dilates = {g.dilation_h - 1, g.dilation_w - 1};
    const memory::dims padding = {g.pad_h, g.pad_w};
    constexpr auto direct = dnnl::algorithm::convolution_direct;
    constexpr auto training = dnnl::prop_kind::forward_training;
    if (shape.bias_term) {
      forward.emplace(training, direct, src, weights, bias_plain, dst, strides, dilates, padding,
                      padding);
      backward_weights.emplace(direct, src, diff_weights, bias_plain, diff_dst, strides, dilates,
                               padding, padding);
    } else {
      forward.emplace(training, direct, src, weights, dst, strides, dilates, padding, padding);
      backward_weights.emplace(direct, src, diff_weights, diff_dst, strides, dilates, padding,
                               padding);
    }
    backward_data.emplace(direct, diff_src, weights, diff_dst, strides, dilates, padding, padding);
  }

  memory::desc src_plain, dst_plain, weights_plain, bias_plain;
  memory::desc src_blocked, dst_blocked;  // zero when the channels do not block
  std::optional<dnnl::convolution_forward::desc> forward;
  std::optional<dnnl::convolution_backward_data::desc> backward_data;
  std::optional<dnnl::convolution_backward_weights::desc> backward_weights;
};

dnnl::convolution_forward::primitive_desc make_forward_pd(
    const dnnl::convolution_forward::desc& desc) {
  return dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(), cpu_engine());
}
// The backward passes' primitive descriptors take the forward one as a hint.
auto backward_data_pd_maker(const dnnl::convolution_forward::primitive_desc& hint) {
  return [&hint](const dnnl::convolution_backward_data::desc& desc) {
    return dnnl::convolution_backward_data::primitive_desc(desc, user_scratchpad(), cpu_engine(),
                                                           hint);
  };
}
auto backward_weights_pd_maker(const dnnl::convolution_forward::primitive_desc& hint) {
  return [&hint](const dnnl::convolution_backward_weights::desc& desc) {
    return dnnl::convolution_backward_weights::primitive_desc(desc, user_scratchpad(), cpu_engine(),
                                                              hint);
  };
}

class OnednnConvolution final : public ConvolutionEngine {
 public:
  OnednnConvolution(const ConvolutionShape& shape, const OnednnConvolutionOptions& options)
      : shape_(shape), stream_(cpu_engine()) {
    using Layout = OnednnConvolutionOptions::Layout;
    operands_ = options.operands;
    XTRAIN_ASSERT(operands_ != NumberType::kFloat16, "oneDNN convolutions take fp32 or bf16");
    const bool bf16 = operands_ == NumberType::kBfloat16;
    // The measured layouts and kernels below are fp32's; in bf16 oneDNN's
    // own choice (channels-last for its AMX kernels) is taken.
    const Layout layout = options.activations != Layout::kMeasuredBest ? options.activations
                          : bf16                                       ? Layout::kChosenByOnednn
                                 : measured_best_layout(shape);
    const OperationDescriptors descriptors(shape, layout, bf16 ? DataType::bf16 : DataType::f32);
    src_plain_ = descriptors.src_plain;
    dst_plain_ = descriptors.dst_plain;
    src_blocked_ = descriptors.src_blocked;
    dst_blocked_ = descriptors.dst_blocked;
    weights_plain_ = descriptors.weights_plain;
    bias_plain_ = descriptors.bias_plain;
    auto preference = [&](Pass pass) {
      ImplementationWanted wanted;
      wanted.name = options.implementations[static_cast<int>(pass)];
      if (!options.first_implementation && !bf16) {
        wanted.prefix = preferred_implementation(shape, pass);
      }
      return wanted;
    };
    forward_pd_ = choose_implementation<dnnl::convolution_forward::primitive_desc>(
        *descriptors.forward, make_forward_pd, preference(Pass::kForward));
    backward_data_pd_ = choose_implementation<dnnl::convolution_backward_data::primitive_desc>(
        *descriptors.backward_data, backward_data_pd_maker(forward_pd_),
        preference(Pass::kBackwardData));
    backward_weights_pd_ =
        choose_implementation<dnnl::convolution_backward_weights::primitive_desc>(
            *descriptors.backward_weights, backward_weights_pd_maker(forward_pd_),
            preference(Pass::kBackwardWeights));
  }

  // Empty when every pass has a real kernel; otherwise why the engine
  // declines (oneDNN's reference kernels are far slower than GEMM).
  std::string why_not() const {
    for (const std::string& kernel :
         {implementation_of(forward_pd_), implementation_of(backward_data_pd_),
          implementation_of(backward_weights_pd_)}) {
      if (starts_with(kernel, "ref"))
        return "oneDNN has only its reference kernel (" + kernel + ")";
    }
    return {};
  }

  NumberType operand_type(ConvolutionPass) const override { return operands_; }

  std::string name() const override {
    return std::string(operands_ == NumberType::kBfloat16 ? "onednn bf16" : "onednn") +
           " (forward " + implementation_of(forward_pd_) + ", backward-data " +
           implementation_of(backward_data_pd_) + ", backward-weights " +
           implementation_of(backward_weights_pd_) + ")";
  }
  const ConvolutionShape& shape() const override { return shape_; }
  std::string kernel(ConvolutionPass pass) const override {
    switch (pass) {
      case Pass::kForward:
        return implementation_of(forward_pd_);
      case Pass::kBackwardData:
        return implementation_of(backward_data_pd_);
      case Pass::kBackwardWeights:
        return implementation_of(backward_weights_pd_);
    }
    return {};
  }

  std::size_t pass_scratch_bytes(ConvolutionPass pass) const override {
    switch (pass) {
      case Pass::kForward:
        return forward_pd_.scratchpad_desc().get_size();
      case Pass::kBackwardData:
        return backward_data_pd_.scratchpad_desc().get_size();
      case Pass::kBackwardWeights:
        return backward_weights_pd_.scratchpad_desc().get_size();
    }
    return 0;
  }

  bool accepts_channel_blocked() const override { return true; }
  bool prefers_channel_blocked() const override {
    return !dst_blocked_.is_zero() && forward_pd_.dst_desc() == dst_blocked_;
  }

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override {
    forward_in(Layouts{}, bottom, weights, bias, top);
  }
  void backward_data(const float* top_diff, const float* weights, float* bottom_diff) override {
    backward_data_in(Layouts{}, top_diff, weights, bottom_diff);
  }
  void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                        float* bias_diff) override {
    backward_weights_in(Layouts{}, bottom, top_diff, weight_diff, bias_diff);
  }
  void backward(const float* bottom, const float* top_diff, const float* weights,
                float* weight_diff, float* bias_diff, float* bottom_diff) override {
    backward_in(Layouts{}, bottom, top_diff, weights, weight_diff, bias_diff, bottom_diff);
  }

  void forward_in(const Layouts& layouts, const float* bottom, const float* weights,
                  const float* bias, float* top) override {
    run([&] {
      if (!forward_) forward_.emplace(this);
      ForwardPass& pass = *forward_;
      Boundary& dst = pass.dst[layouts.top];
      Arguments args = {{DNNL_ARG_SRC, pass.src[layouts.bottom].in(bottom, stream_)},
                        {DNNL_ARG_WEIGHTS, pass.weights.in(weights, stream_)},
                        {DNNL_ARG_DST, dst.out(top)}};
      if (shape_.bias_term) {
        args.emplace(DNNL_ARG_BIAS, memory(bias_plain_, cpu_engine(), const_cast<float*>(bias)));
      }
      add_scratchpad(forward_pd_, &args);
      pass.primitive.execute(stream_, args);
      dst.finish(stream_);
    });
  }

  void backward_in(const Layouts& layouts, const float* bottom, const float* top_diff,
                   const float* weights, float* weight_diff, float* bias_diff,
                   float* bottom_diff) override {
    const bool same_top_diff_layout =
        backward_weights_pd_.diff_dst_desc() == backward_data_pd_.diff_dst_desc();
    if (!wants_weight_gradients(weight_diff, bias_diff) || bottom_diff == nullptr ||
        !same_top_diff_layout) {
      if (wants_weight_gradients(weight_diff, bias_diff)) {
        backward_weights_in(layouts, bottom, top_diff, weight_diff, bias_diff);
      }
      if (bottom_diff != nullptr) backward_data_in(layouts, top_diff, weights, bottom_diff);
      return;
    }
    run([&] {
      if (!backward_weights_) backward_weights_.emplace(this);
      if (!backward_data_) backward_data_.emplace(this);
      // The weight pass's copy of top_diff serves the data pass too.
      const memory& top_diff_inner = backward_weights_->top_diff[layouts.top].in(top_diff, stream_);
      run_backward_weights(layouts, bottom, top_diff_inner, weight_diff, bias_diff);
      run_backward_data(layouts, top_diff_inner, weights, bottom_diff);
    });
  }

 private:
  void backward_data_in(const Layouts& layouts, const float* top_diff, const float* weights,
                        float* bottom_diff) {
    run([&] {
      if (!backward_data_) backward_data_.emplace(this);
      run_backward_data(layouts, backward_data_->top_diff[layouts.top].in(top_diff, stream_),
                        weights, bottom_diff);
    });
  }

  void backward_weights_in(const Layouts& layouts, const float* bottom, const float* top_diff,
                           float* weight_diff, float* bias_diff) {
    if (!wants_weight_gradients(weight_diff, bias_diff)) return;
    run([&] {
      if (!backward_weights_) backward_weights_.emplace(this);
      run_backward_weights(layouts, bottom,
                           backward_weights_->top_diff[layouts.top].in(top_diff, stream_),
                           weight_diff, bias_diff);
    });
  }

  // The primitives are made on first use: a net that only runs forward
  // (testing, deploy) never compiles the backward kernels.
  struct ForwardPass {
    explicit ForwardPass(OnednnConvolution* e)
        : primitive(e->forward_pd_),
          src(e->src_plain_, e->src_blocked_, e->forward_pd_.src_desc(), kSourceRole),
          weights(e->weights_plain_, e->forward_pd_.weights_desc(), kWeightsRole),
          dst(e->dst_plain_, e->dst_blocked_, e->forward_pd_.dst_desc(), kDestinationRole) {}
    dnnl::convolution_forward primitive;
    ActivationBoundary src;
    Boundary weights;
    ActivationBoundary dst;
  };
  struct BackwardDataPass {
    explicit BackwardDataPass(OnednnConvolution* e)
        : primitive(e->backward_data_pd_),
          top_diff(e->dst_plain_, e->dst_blocked_, e->backward_data_pd_.diff_dst_desc(),
                   kDestinationRole),
          weights(e->weights_plain_, e->backward_data_pd_.weights_desc(), kWeightsRole),
          bottom_diff(e->src_plain_, e->src_blocked_, e->backward_data_pd_.diff_src_desc(),
                      kSourceDiffRole) {}
    dnnl::convolution_backward_data primitive;
    ActivationBoundary top_diff;
    Boundary weights;
    ActivationBoundary bottom_diff;
  };
  struct BackwardWeightsPass {
    explicit BackwardWeightsPass(OnednnConvolution* e)
        : primitive(e->backward_weights_pd_),
          bottom(e->src_plain_, e->src_blocked_, e->backward_weights_pd_.src_desc(), kSourceRole),
          top_diff(e->dst_plain_, e->dst_blocked_, e->backward_weights_pd_.diff_dst_desc(),
                   kDestinationRole),
          weight_diff(e->weights_plain_, e->backward_weights_pd_.diff_weights_desc(),
                      kWeightDiffRole, /*accumulate=*/true) {
      if (e->shape_.bias_term) {
        bias_diff.emplace(e->bias_plain_, e->backward_weights_pd_.diff_bias_desc(), kBiasDiffRole,
                          /*accumulate=*/true);
      }
    }
    dnnl::convolution_backward_weights primitive;
    ActivationBoundary bottom, top_diff;
    Boundary weight_diff;
    std::optional<Boundary> bias_diff;
  };

  bool wants_weight_gradients(const float* weight_diff, const float* bias_diff) const {
    return weight_diff != nullptr || (bias_diff != nullptr && shape_.bias_term);
  }

  // The data pass with top_diff already in the primitive's layout.
  void run_backward_data(const Layouts& layouts, const memory& top_diff, const float* weights,
                         float* bottom_diff) {
    BackwardDataPass& pass = *backward_data_;
    Boundary& diff_src = pass.bottom_diff[layouts.bottom];
    Arguments args = {{DNNL_ARG_DIFF_DST, top_diff},
                      {DNNL_ARG_WEIGHTS, pass.weights.in(weights, stream_)},
                      {DNNL_ARG_DIFF_SRC, diff_src.out(bottom_diff)}};
    add_scratchpad(backward_data_pd_, &args);
    pass.primitive.execute(stream_, args);
    diff_src.finish(stream_);
  }

  // The weight pass with top_diff already in the primitive's layout.
  void run_backward_weights(const Layouts& layouts, const float* bottom, const memory& top_diff,
                            float* weight_diff, float* bias_diff) {
    BackwardWeightsPass& pass = *backward_weights_;
    Arguments args = {{DNNL_ARG_SRC, pass.bottom[layouts.bottom].in(bottom, stream_)},
                      {DNNL_ARG_DIFF_DST, top_diff},
                      {DNNL_ARG_DIFF_WEIGHTS, pass.weight_diff.out(weight_diff)}};
    if (pass.bias_diff) args.emplace(DNNL_ARG_DIFF_BIAS, pass.bias_diff->out(bias_diff));
    add_scratchpad(backward_weights_pd_, &args);
    pass.primitive.execute(stream_, args);
    pass.weight_diff.finish(stream_);
    if (pass.bias_diff) pass.bias_diff->finish(stream_);
  }

  // oneDNN reports failures as dnnl::error; the library throws xtrain::Error.
  template <typename Body>
  void run(Body body) {
    try {
      body();
      stream_.wait();
    } catch (const dnnl::error& error) {
      throw Error(detail::concat("oneDNN convolution ", shape_.to_string(), " failed: ",
                                 error.what(), " (set XTRAIN_CONV_IMPL=gemm to avoid oneDNN)"));
    }
  }

  ConvolutionShape shape_;
  NumberType operands_ = NumberType::kFloat32;
  dnnl::stream stream_;
  memory::desc src_plain_, dst_plain_, weights_plain_, bias_plain_;
  memory::desc src_blocked_, dst_blocked_;  // zero when the channels do not block
  dnnl::convolution_forward::primitive_desc forward_pd_;
  dnnl::convolution_backward_data::primitive_desc backward_data_pd_;
  dnnl::convolution_backward_weights::primitive_desc backward_weights_pd_;
  std::optional<ForwardPass> forward_;
  std::optional<BackwardDataPass> backward_data_;
  std::optional<BackwardWeightsPass> backward_weights_;
};

}  // namespace

bool onednn_available() { return true; }

bool onednn_blocks_channels_like_xtrain() {
  return channel_block() == (onednn_cpu_isa() == CpuIsa::kAvx512 ? 16 : 8);
}

std::string onednn_kernel_set() {
  const dnnl_version_t* version = dnnl_version();
  std::ostringstream text;
  text << "oneDNN " << version->major << "." << version->minor << "." << version->patch << " ("
       << version->hash << ", ISA 0x" << std::hex
       << static_cast<unsigned>(dnnl::get_effective_cpu_isa()) << ")";
  return text.str();
}

std::vector<std::string> onednn_convolution_implementations(const ConvolutionShape& shape,
                                                            OnednnConvolutionOptions::Layout layout,
                                                            ConvolutionPass pass,
                                                            NumberType operands) {
  try {
    const OperationDescriptors descriptors(
        shape, layout, operands == NumberType::kBfloat16 ? DataType::bf16 : DataType::f32);
    const auto forward_pd = make_forward_pd(*descriptors.forward);
    switch (pass) {
      case Pass::kForward:
        return list_implementations<dnnl::convolution_forward::primitive_desc>(*descriptors.forward,
                                                                               make_forward_pd);
      case Pass::kBackwardData:
        return list_implementations<dnnl::convolution_backward_data::primitive_desc>(
            *descriptors.backward_data, backward_data_pd_maker(forward_pd));
      case Pass::kBackwardWeights:
        return list_implementations<dnnl::convolution_backward_weights::primitive_desc>(
            *descriptors.backward_weights, backward_weights_pd_maker(forward_pd));
    }
  } catch (const dnnl::error&) {
    // oneDNN cannot compute this shape in this layout: no candidates.
  }
  return {};
}

std::unique_ptr<ConvolutionEngine> make_onednn_convolution(const ConvolutionShape& shape,
                                                           const OnednnConvolutionOptions& options,
                                                           std::string* why_not) {
  return make_engine_or_say_why_not<OnednnConvolution>(why_not, "convolution", shape, options);
}

}  // namespace xtrain

#else  // !XTRAIN_HAVE_ONEDNN

namespace xtrain {

bool onednn_available() { return false; }

std::size_t onednn_convolution_scratch_bytes() { return 0; }

bool onednn_blocks_channels_like_xtrain() { return false; }

std::string onednn_kernel_set() { return "no oneDNN"; }

std::vector<std::string> onednn_convolution_implementations(const ConvolutionShape&,
                                                            OnednnConvolutionOptions::Layout,
                                                            ConvolutionPass, NumberType) {
  return {};
}

std::unique_ptr<ConvolutionEngine> make_onednn_convolution(const ConvolutionShape& shape,
                                                           const OnednnConvolutionOptions& options,
                                                           std::string* why_not) {
  (void)shape;
  (void)options;
  *why_not = "this build of xtrain has no oneDNN (install libdnnl-dev and reconfigure)";
  return nullptr;
}

}  // namespace xtrain

#endif

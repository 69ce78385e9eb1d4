// ConvolutionEngine: one way of computing a 2-D convolution of a fixed shape
// on plain NCHW float arrays, forward and backward.
//
// The Convolution layer keeps an ordered list of engines (see
// make_convolution_engine): a fast one (oneDNN) is tried first and may decline
// a shape, saying why; the reference (im2col + OpenBLAS GEMM) always works and
// is the oracle the fast one is tested against.
//
// With the shape's `group` splitting input channels and filters alike,
//   top[n, o, y, x] = bias[o] + sum over c in group(o), i, j of
//       weight[o, c, i, j] * bottom[n, c, y*sh - ph + i*dh, x*sw - pw + j*dw]
// (bottom reads as 0 outside the image). Weights are (num_output,
// channels / group, kh, kw), the bias (num_output).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "layers/im2col.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

class ConvolutionParameter;

struct ConvolutionShape {
  int num = 0;              // images in the batch
  Im2colGeometry geometry;  // of one input image: channels, size, kernel, pad, stride, dilation
  int num_output = 0;
  int group = 1;
  bool bias_term = false;

  int out_height() const { return geometry.output_h(); }
  int out_width() const { return geometry.output_w(); }
  std::size_t input_dim() const {  // values of one input image
    return static_cast<std::size_t>(geometry.channels) * geometry.height * geometry.width;
  }
  std::size_t output_dim() const {  // values of one output image
    return static_cast<std::size_t>(num_output) * out_height() * out_width();
  }
  std::size_t weight_count() const {
    return static_cast<std::size_t>(num_output) * (geometry.channels / group) * geometry.kernel_h *
           geometry.kernel_w;
  }
  // Multiply-adds of one forward pass over the batch, times two.
  double flops() const {
    return 2.0 * num * static_cast<double>(output_dim()) * (geometry.channels / group) *
           geometry.kernel_h * geometry.kernel_w;
  }
  // "64x20x12x12 -> 50x8x8, kernel 5x5, stride 1x1, pad 0x0, dilation 1x1, group 1, bias"
  std::string to_string() const;
};

bool operator==(const ConvolutionShape& a, const ConvolutionShape& b);
inline bool operator!=(const ConvolutionShape& a, const ConvolutionShape& b) { return !(a == b); }

// The three computations of a convolution, each of which may run on another
// kernel (or engine) than the others.
enum class ConvolutionPass { kForward, kBackwardData, kBackwardWeights };
constexpr int kConvolutionPassCount = 3;
const char* to_string(ConvolutionPass pass);  // "forward", "backward-data", "backward-weights"

class ConvolutionEngine {
 public:
  virtual ~ConvolutionEngine() = default;

  // "gemm", or "onednn (jit:avx512_core, ...)": names the kernels in use.
  virtual std::string name() const = 0;
  virtual const ConvolutionShape& shape() const = 0;
  // What computes one pass: oneDNN's implementation name ("jit:avx2"), or
  // name() for an engine with one kernel for all.
  virtual std::string kernel(ConvolutionPass pass) const {
    (void)pass;
    return name();
  }
  // Host bytes the engine holds itself (see EngineHooks::buffer_bytes).
  virtual std::size_t buffer_bytes() const { return 0; }
  // Host bytes of scratch one call of `pass` needs beyond the arrays it is
  // given and what buffer_bytes() counts: oneDNN's per-call working memory
  // (its scratchpad), which every layer's calls share, so the largest one
  // in a net is what the net pays (convolution_search.cpp weighs it).
  virtual std::size_t pass_scratch_bytes(ConvolutionPass pass) const {
    (void)pass;
    return 0;
  }
  // The type a pass multiplies in, rounding its operands (inputs, weights,
  // gradients) to it itself: a bf16 oneDNN engine. kFloat32: it multiplies
  // the arrays as given, so a layer in a 16-bit precision rounds them first
  // (core/rounded_operand.hpp). Results are fp32 either way.
  virtual NumberType operand_type(ConvolutionPass pass) const {
    (void)pass;
    return NumberType::kFloat32;
  }

  // top = weights * bottom (+ bias, when the shape has bias_term; else
  // `bias` is ignored). Overwrites top.
  virtual void forward(const float* bottom, const float* weights, const float* bias,
                       float* top) = 0;
  // bottom_diff = the adjoint of forward applied to top_diff. Overwrites.
  virtual void backward_data(const float* top_diff, const float* weights, float* bottom_diff) = 0;
  // weight_diff += dE/dweights, bias_diff += dE/dbias: parameter gradients
  // accumulate (iter_size, shared weights and several bottoms add up; the
  // solver clears them). Either pointer may be null to skip that gradient.
  virtual void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                                float* bias_diff) = 0;
  // Both backward passes of one top: backward_weights, then backward_data
  // when bottom_diff is not null. An engine that converts top_diff to its
  // own layout does that once here instead of once per pass.
  virtual void backward(const float* bottom, const float* top_diff, const float* weights,
                        float* weight_diff, float* bias_diff, float* bottom_diff) {
    if (weight_diff != nullptr || bias_diff != nullptr) {
      backward_weights(bottom, top_diff, weight_diff, bias_diff);
    }
    if (bottom_diff != nullptr) backward_data(top_diff, weights, bottom_diff);
  }

  // The activations' layouts in a call: `bottom` for bottom and bottom_diff,
  // `top` for top and top_diff. Weights and biases are always plain.
  struct Layouts {
    MemoryLayout bottom = MemoryLayout::kPlain;
    MemoryLayout top = MemoryLayout::kPlain;
  };
  // Whether forward/backward below take channel-blocked activations (the
  // plain-only engines say no and the layer converts for them).
  virtual bool accepts_channel_blocked() const { return false; }
  // Whether the engine computes in the channel-blocked layout, so that
  // blocked activations save it reorders.
  virtual bool prefers_channel_blocked() const { return false; }
  virtual void forward_in(const Layouts& layouts, const float* bottom, const float* weights,
                          const float* bias, float* top);
  virtual void backward_in(const Layouts& layouts, const float* bottom, const float* top_diff,
                           const float* weights, float* weight_diff, float* bias_diff,
                           float* bottom_diff);
};

// What XTRAIN_CONV_IMPL asks for:
//   unset or "auto":  oneDNN where it accepts the shape and the measured rules
//                     in convolution_engine.cpp expect it to be faster, else GEMM;
//   "onednn":         oneDNN for every shape it accepts (tests, benchmarks);
//   "gemm":           im2col + BLAS only.
// Anything else throws.
enum class ConvolutionEngineChoice { kAuto, kOnednn, kGemm };
ConvolutionEngineChoice convolution_engine_choice_from_environment();

// The first engine of the ordered list that takes `shape`; logs one INFO
// line naming it and, when the faster engine was passed over, why. `where`
// prefixes messages ("layer 'conv1' (Convolution)"). With `operands`
// kBfloat16 on a CPU that multiplies bf16 in hardware, oneDNN's bf16
// kernels come first (an engine whose operand_type() says so); elsewhere,
// and for fp16, the fp32 engines, whose operands the layer rounds.
std::unique_ptr<ConvolutionEngine> make_convolution_engine(
    const ConvolutionShape& shape, const ConvolutionParameter& param, const std::string& where,
    NumberType operands = NumberType::kFloat32);

// Whether this machine can multiply `operands` in its own convolution kernels
// (bf16 with oneDNN's AVX512-BF16 or AMX kernels); otherwise a 16-bit layer
// computes in fp32 on rounded operands.
bool convolution_kernels_multiply(NumberType operands);

}  // namespace xtrain

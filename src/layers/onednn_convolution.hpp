// The oneDNN convolution engine: forward, backward-data and backward-weights
// primitives made once per shape, the activations plain NCHW or
// channel-blocked (nChw16c, ConvolutionEngine::forward_in) at the layer
// boundary, reordered only where the primitive wants another layout, and the
// weights in whatever layout each primitive prefers
// (format_tag::any, reordered from the blob on every call, since the solver
// changes them). Parameter gradients come out in the primitive's layout and
// are added into the plain diffs by one reorder with a sum post-op.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "layers/convolution_engine.hpp"
#include "xtrain/convolution_scratch.hpp"  // onednn_convolution_scratch_bytes

namespace xtrain {

// Ways to steer the engine for tests and benchmarks; the defaults are what
// the Convolution layer uses.
struct OnednnConvolutionOptions {
  // The activations' layout inside the primitives (they are NCHW or nChw16c
  // outside, reordered at the boundary unless the layouts agree).
  enum class Layout {
    kMeasuredBest,    // the measured rules in onednn_convolution.cpp
    kChosenByOnednn,  // usually blocked, e.g. nChw16c
    kNchw,
    kNhwc,  // channels last: no padding of the channels to a block of 16
  };
  Layout activations = Layout::kMeasuredBest;
  // Take oneDNN's first implementation for every direction, ignoring the
  // measured exceptions in onednn_convolution.cpp.
  bool first_implementation = false;
  // Per pass (indexed by ConvolutionPass), the implementation to take, by the
  // exact name oneDNN gives it ("jit:avx512_core", "gemm:jit", ...; see
  // onednn_convolution_implementations). Empty: the rules above decide. A
  // name that oneDNN does not offer for the shape falls back to them too.
  std::array<std::string, kConvolutionPassCount> implementations;
  // What the primitives multiply: kFloat32, or kBfloat16 (the inputs,
  // weights and top gradients reordered to bf16 at the boundary, rounding to
  // nearest even; the results, the bias and every gradient written in fp32,
  // accumulated in fp32). kFloat16 is not offered.
  NumberType operands = NumberType::kFloat32;
};

// Whether this build has oneDNN.
bool onednn_available();

// Whether oneDNN's convolution kernels on this CPU (as capped by
// ONEDNN_MAX_CPU_ISA or XTRAIN_MAX_CPU_ISA) compute in the channel-blocked
// layout xtrain keeps between layers: its AVX-512 kernels block by 16
// (nChw16c), its AVX2 ones by 8 (nChw8c), and channel_block() follows them.
// False only when a test forces the other width, or without oneDNN.
bool onednn_blocks_channels_like_xtrain();

// Which oneDNN and which of its kernel sets this process runs, e.g.
// "oneDNN 2.6.3 (ISA 0x...)": a timed choice made under another is stale.
std::string onednn_kernel_set();

// The names of the implementations oneDNN offers for one pass of `shape` with
// the activations in `layout` (not kMeasuredBest), best first as oneDNN
// ranks them, without its reference kernels; empty when it offers none (or
// the build has no oneDNN).
std::vector<std::string> onednn_convolution_implementations(
    const ConvolutionShape& shape, OnednnConvolutionOptions::Layout layout, ConvolutionPass pass,
    NumberType operands = NumberType::kFloat32);

// The engine for `shape`, or null when oneDNN declines it (or the build has
// no oneDNN), with the reason in *why_not.
std::unique_ptr<ConvolutionEngine> make_onednn_convolution(const ConvolutionShape& shape,
                                                           const OnednnConvolutionOptions& options,
                                                           std::string* why_not);

}  // namespace xtrain

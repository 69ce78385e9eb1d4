// The oneDNN convolution engine: forward, backward-data and backward-weights
// primitives made once per shape, the activations plain NCHW or
// channel-blocked (nChw16c, ConvolutionEngine::forward_in) at the layer
// boundary, reordered only where the primitive wants another layout, and the
// weights in whatever layout each primitive prefers
// (format_tag::any, reordered from the blob on every call, since the solver
// changes them). Parameter gradients come out in the primitive's layout and
// are added into the plain diffs by one reorder with a sum post-op.
#pragma once

#include <memory>
#include <string>

#include "layers/convolution_engine.hpp"

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
};

// Whether this build has oneDNN.
bool onednn_available();

// Whether oneDNN's convolution kernels on this CPU (as capped by
// ONEDNN_MAX_CPU_ISA or XTRAIN_MAX_CPU_ISA) compute in the channel-blocked
// layout xtrain keeps between layers: its AVX-512 kernels block by 16
// (nChw16c), its AVX2 ones by 8 (nChw8c), and channel_block() follows them.
// False only when a test forces the other width, or without oneDNN.
bool onednn_blocks_channels_like_xtrain();

// The engine for `shape`, or null when oneDNN declines it (or the build has
// no oneDNN), with the reason in *why_not.
std::unique_ptr<ConvolutionEngine> make_onednn_convolution(const ConvolutionShape& shape,
                                                           const OnednnConvolutionOptions& options,
                                                           std::string* why_not);

}  // namespace xtrain

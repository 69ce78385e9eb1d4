// DirectConvolution: a convolution computed straight from the images, with
// vector kernels of our own (direct_convolution_kernels.hpp), for the shape
// that oneDNN and im2col + GEMM both handle badly: a net's first layer, on
// grey or colour images (at most kMaxChannels input channels), stride 1.
// There im2col copies each pixel kh * kw times for a product of only C * kh
// * kw terms, and oneDNN's kernels block over input channels it does not
// have (LeNet's conv1 ran its weight gradient at ~9 GFLOP/s on AVX2).
//
//   forward:           top    = correlate(pad(bottom), w) + bias
//   backward-data:     bottom_diff = correlate(pad'(top_diff), flip(w)^T),
//                      pad' = kernel - 1 - pad on each side
//   backward-weights:  dw[o, c, i, j] += sum over n, y, x of
//                      top_diff[n, o, y, x] * pad(bottom)[n, c, y + i, x + j]
//
// Images go to the threads in parallel; the weight gradient sums per thread
// and adds the threads' sums at the end. The timed search
// (convolution_search.hpp) offers it next to oneDNN and GEMM, per pass, in
// each vector width the CPU has ("direct8", "direct16").
#pragma once

#include <string>
#include <vector>

#include "layers/convolution_engine.hpp"
#include "layers/direct_convolution_kernels.hpp"

namespace xtrain {

class DirectConvolution final : public ConvolutionEngine {
 public:
  static constexpr int kMaxChannels = 4;

  // Whether the engine computes `shape` with `lanes`-wide vectors on this
  // CPU; if not, *why_not (when given) says why.
  static bool accepts(const ConvolutionShape& shape, int lanes, std::string* why_not = nullptr);
  // The widths to time for `shape` (each accepted), widest first.
  static std::vector<int> lane_widths_for(const ConvolutionShape& shape);
  // "direct8" for 8 lanes; lanes_of reads it back (0 for any other name).
  static std::string name_for(int lanes);
  static int lanes_of(const std::string& name);

  // accepts(shape, lanes) must hold.
  DirectConvolution(const ConvolutionShape& shape, int lanes);

  std::string name() const override { return name_for(lanes_); }
  const ConvolutionShape& shape() const override { return shape_; }
  std::size_t buffer_bytes() const override;

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override;
  void backward_data(const float* top_diff, const float* weights, float* bottom_diff) override;
  void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                        float* bias_diff) override;

 private:
  ConvolutionShape shape_;
  int lanes_ = 0;
  const CorrelationKernels* kernels_ = nullptr;
  CorrelationPlan forward_plan_;  // pad(bottom) -> top; also the weight gradient's
  CorrelationPlan adjoint_plan_;  // pad'(top_diff) -> bottom_diff
  std::vector<float> packed_;     // the weights as the pass at hand reads them
  std::vector<float> partials_;   // per thread: dw lanes, then the bias sums
};

}  // namespace xtrain

// WinogradConvolution: a 5x5, stride-1 convolution by Winograd's F(2x2, 5x5)
// (winograd_kernels.hpp), which needs 36 multiplications per 2x2 outputs and
// channel pair where the direct sum needs 100; the transforms cost a little
// of that back. Forward and backward-data only:
//
//   forward:         top         = winograd(pad(bottom), w) + bias
//   backward-data:   bottom_diff = winograd(pad'(top_diff), flip(w)^T),
//                    pad' = 4 - pad on each side
//   backward-weights: im2col + GEMM (GemmConvolution); the timed search
//                    takes another engine's where that is faster.
//
// Activations may be plain or channel-blocked on either side (the kernels
// read and write both, so a Winograd pass between blocked neighbours costs
// no reorder); only the weight gradient, GEMM's, needs plain arrays and
// converts for itself. The engine does not ask for blocked activations
// itself (prefers_channel_blocked): alone it is a plain engine; beside
// oneDNN's blocked weight gradient (PerPassConvolution) it follows that one.
//
// Images go to the threads in groups of 8 (a vector's lanes). The sums are
// those of the exact convolution up to rounding: the transforms' constants
// (1/6, 1/24, ...) and their additions add a few ulps per product, well
// inside the tests' float tolerance. The timed search (convolution_search.hpp)
// offers it as "winograd" where accepts() holds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/convolution_engine.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/winograd_kernels.hpp"

namespace xtrain {

class WinogradConvolution final : public ConvolutionEngine {
 public:
  static constexpr const char* kName = "winograd";

  // Whether the engine computes `shape`; if not, *why_not (when given) says why.
  static bool accepts(const ConvolutionShape& shape, std::string* why_not = nullptr);

  // accepts(shape) must hold.
  explicit WinogradConvolution(const ConvolutionShape& shape);

  std::string name() const override { return kName; }
  const ConvolutionShape& shape() const override { return shape_; }
  std::string kernel(ConvolutionPass pass) const override;
  std::size_t buffer_bytes() const override;

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override;
  void backward_data(const float* top_diff, const float* weights, float* bottom_diff) override;
  void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                        float* bias_diff) override;

  bool accepts_channel_blocked() const override { return true; }
  void forward_in(const Layouts& layouts, const float* bottom, const float* weights,
                  const float* bias, float* top) override;
  void backward_in(const Layouts& layouts, const float* bottom, const float* top_diff,
                   const float* weights, float* weight_diff, float* bias_diff,
                   float* bottom_diff) override;

 private:
  // Every group of 8 images: `source_dim` floats apart in `sources` (in the
  // layout `plan` says), their results `result_dim` apart in `results`.
  void run(const WinogradPlan& plan, const float* sources, std::size_t source_dim,
           const float* bias, float* results, std::size_t result_dim);
  void backward_data_in(const Layouts& layouts, const float* top_diff, const float* weights,
                        float* bottom_diff);
  // `values` in the plain layout: itself, or a copy converted from the
  // channel-blocked layout into `copy`.
  const float* plain(const float* values, MemoryLayout layout, int channels, int spatial,
                     std::vector<float>& copy) const;

  ConvolutionShape shape_;
  WinogradPlan forward_plan_;  // pad(bottom) -> top
  WinogradPlan adjoint_plan_;  // pad'(top_diff) -> bottom_diff
  // GEMM's weight gradient, made at its first call: beside oneDNN's weight
  // gradient (the usual timed choice) it never runs, and its im2col buffer
  // (25 values per input value of an image) would only take memory.
  GemmConvolution& weight_gradient();

  std::vector<float> transformed_;
  std::unique_ptr<GemmConvolution> weight_gradient_;
  std::vector<float> plain_bottom_, plain_top_diff_;  // for the weight gradient only
};

}  // namespace xtrain

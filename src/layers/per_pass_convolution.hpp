// PerPassConvolution: a convolution whose passes run on different engines,
// e.g. forward on oneDNN and backward-weights on im2col + GEMM, where the
// timed search (convolution_search.hpp) found each pass fastest. It takes
// channel-blocked activations where all its engines do, and asks for them
// where one of those computes in that layout (oneDNN's blocked kernels beside
// our Winograd passes); otherwise it computes on plain arrays.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "layers/convolution_engine.hpp"

namespace xtrain {

class PerPassConvolution final : public ConvolutionEngine {
 public:
  // `by_pass[p]` indexes `engines`, which must all be of one shape; `engines`
  // holds each engine once.
  PerPassConvolution(std::array<std::shared_ptr<ConvolutionEngine>, kConvolutionPassCount> by_pass);

  // "forward onednn (...); backward-data gemm; backward-weights gemm"
  std::string name() const override;
  const ConvolutionShape& shape() const override { return by_pass_[0]->shape(); }
  std::string kernel(ConvolutionPass pass) const override {
    return by_pass_[static_cast<int>(pass)]->kernel(pass);
  }
  NumberType operand_type(ConvolutionPass pass) const override {
    return by_pass_[static_cast<int>(pass)]->operand_type(pass);
  }
  // Each engine once, though it may compute several passes.
  std::size_t buffer_bytes() const override;
  std::size_t pass_scratch_bytes(ConvolutionPass pass) const override {
    return by_pass_[static_cast<int>(pass)]->pass_scratch_bytes(pass);
  }

  void forward(const float* bottom, const float* weights, const float* bias, float* top) override;
  void backward_data(const float* top_diff, const float* weights, float* bottom_diff) override;
  void backward_weights(const float* bottom, const float* top_diff, float* weight_diff,
                        float* bias_diff) override;

  bool accepts_channel_blocked() const override;
  bool prefers_channel_blocked() const override;
  void forward_in(const Layouts& layouts, const float* bottom, const float* weights,
                  const float* bias, float* top) override;
  void backward_in(const Layouts& layouts, const float* bottom, const float* top_diff,
                   const float* weights, float* weight_diff, float* bias_diff,
                   float* bottom_diff) override;

 private:
  ConvolutionEngine& engine(ConvolutionPass pass) { return *by_pass_[static_cast<int>(pass)]; }

  std::array<std::shared_ptr<ConvolutionEngine>, kConvolutionPassCount> by_pass_;
};

}  // namespace xtrain

#include "layers/per_pass_convolution.hpp"

#include "xtrain/error.hpp"

namespace xtrain {

PerPassConvolution::PerPassConvolution(
    std::array<std::shared_ptr<ConvolutionEngine>, kConvolutionPassCount> by_pass)
    : by_pass_(std::move(by_pass)) {
  for (const auto& engine : by_pass_) {
    XTRAIN_ASSERT(engine != nullptr && engine->shape() == by_pass_[0]->shape(),
                  "the engines of a PerPassConvolution must share one shape");
  }
}

std::string PerPassConvolution::name() const {
  std::string text;
  for (int pass = 0; pass < kConvolutionPassCount; ++pass) {
    if (pass > 0) text += "; ";
    text += std::string(to_string(static_cast<ConvolutionPass>(pass))) + " " +
            by_pass_[pass]->name();
  }
  return text;
}

std::size_t PerPassConvolution::buffer_bytes() const {
  std::size_t bytes = 0;
  for (int pass = 0; pass < kConvolutionPassCount; ++pass) {
    bool counted = false;
    for (int earlier = 0; earlier < pass; ++earlier) counted |= by_pass_[earlier] == by_pass_[pass];
    if (!counted) bytes += by_pass_[pass]->buffer_bytes();
  }
  return bytes;
}

void PerPassConvolution::forward(const float* bottom, const float* weights, const float* bias,
                                 float* top) {
  engine(ConvolutionPass::kForward).forward(bottom, weights, bias, top);
}

void PerPassConvolution::backward_data(const float* top_diff, const float* weights,
                                       float* bottom_diff) {
  engine(ConvolutionPass::kBackwardData).backward_data(top_diff, weights, bottom_diff);
}

void PerPassConvolution::backward_weights(const float* bottom, const float* top_diff,
                                          float* weight_diff, float* bias_diff) {
  engine(ConvolutionPass::kBackwardWeights)
      .backward_weights(bottom, top_diff, weight_diff, bias_diff);
}

bool PerPassConvolution::accepts_channel_blocked() const {
  for (const auto& engine : by_pass_) {
    if (!engine->accepts_channel_blocked()) return false;
  }
  return true;
}

bool PerPassConvolution::prefers_channel_blocked() const {
  if (!accepts_channel_blocked()) return false;
  for (const auto& engine : by_pass_) {
    if (engine->prefers_channel_blocked()) return true;
  }
  return false;
}

void PerPassConvolution::forward_in(const Layouts& layouts, const float* bottom,
                                    const float* weights, const float* bias, float* top) {
  engine(ConvolutionPass::kForward).forward_in(layouts, bottom, weights, bias, top);
}

void PerPassConvolution::backward_in(const Layouts& layouts, const float* bottom,
                                     const float* top_diff, const float* weights,
                                     float* weight_diff, float* bias_diff, float* bottom_diff) {
  ConvolutionEngine& weights_engine = engine(ConvolutionPass::kBackwardWeights);
  ConvolutionEngine& data_engine = engine(ConvolutionPass::kBackwardData);
  // One engine for both keeps its sharing of the converted top_diff.
  if (&weights_engine == &data_engine) {
    weights_engine.backward_in(layouts, bottom, top_diff, weights, weight_diff, bias_diff,
                               bottom_diff);
    return;
  }
  if (weight_diff != nullptr || bias_diff != nullptr) {
    weights_engine.backward_in(layouts, bottom, top_diff, weights, weight_diff, bias_diff,
                               nullptr);
  }
  if (bottom_diff != nullptr) {
    data_engine.backward_in(layouts, bottom, top_diff, weights, nullptr, nullptr, bottom_diff);
  }
}

}  // namespace xtrain

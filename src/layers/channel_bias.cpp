#include "layers/channel_bias.hpp"

#include "core/math_functions.hpp"

namespace xtrain {

ChannelBias::ChannelBias(int channels, int pixels)
    : channels_(channels), pixels_(pixels), ones_(static_cast<std::size_t>(pixels), 1.0f) {}

void ChannelBias::add(const float* bias, float* image) const {
  math::gemm(math::Transpose::kNo, math::Transpose::kNo, channels_, pixels_, 1, 1.0f, bias,
             ones_.data(), 1.0f, image);
}

void ChannelBias::accumulate_gradient(const float* image_diff, float* bias_diff) const {
  math::gemv(math::Transpose::kNo, channels_, pixels_, 1.0f, image_diff, ones_.data(), 1.0f,
             bias_diff);
}

}  // namespace xtrain

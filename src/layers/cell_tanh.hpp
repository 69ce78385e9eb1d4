// tanh for the LSTM cell's gates (lstm_unit_ops.hpp), in a form the CPU
// compiler vectorises: glibc's tanhf is a scalar call (it kept the fused
// LSTM's forward at ~3 ns per value, most of the layer's time). A GPU uses
// CUDA's tanhf.
//
// For |x| < 1/4 the odd Taylor series to x^9 (the first term left out,
// 1382/155925 x^11, is below 4e-9 x); above, tanh|x| = (1 - e) / (1 + e) with
// e = exp(-2|x|), exp by range reduction (-2|x| = k ln 2 + r, |r| <= ln(2)/2,
// ln 2 split in two so that k ln 2 is exact) and the Taylor series of e^r to
// r^7 (error below 6e-9 relative); |x| is capped at 9, where tanh is 1 in
// float. The result is within a few float ulps of tanh's (tested against
// std::tanh in recurrent_fused_test.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

XTRAIN_HOST_DEVICE inline float cell_tanh(float x) {
#ifdef __CUDA_ARCH__
  return tanhf(x);
#else
  // Not fmin: a NaN must stay NaN.
  const float a = std::fabs(x) > 9.0f ? 9.0f : std::fabs(x);
  // Small |x|: x (1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835).
  const float a2 = a * a;
  const float series =
      a * (1.0f + a2 * (-1.0f / 3.0f +
                        a2 * (2.0f / 15.0f + a2 * (-17.0f / 315.0f + a2 * (62.0f / 2835.0f)))));
  // Large |x|: e = 2^k e^r with y = -2|x| = k ln 2 + r.
  const float y = -2.0f * a;
  // k = round(y / ln 2), by adding and taking away 1.5 * 2^23 (exact for
  // |y / ln 2| < 2^22; std::nearbyint needs SSE4.1 to vectorise).
  const float k = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (y - k * 0.693145751953125f) - k * 1.42860682030941723e-6f;
  const float exp_r =
      1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6.0f +
                                          r * (1.0f / 24.0f +
                                               r * (1.0f / 120.0f +
                                                    r * (1.0f / 720.0f + r * (1.0f / 5040.0f)))))));
  const std::int32_t bits = (static_cast<std::int32_t>(k) + 127) << 23;  // 2^k, k in [-26, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  const float e = exp_r * scale;
  const float magnitude = a < 0.25f ? series : (1.0f - e) / (1.0f + e);
  return std::copysign(magnitude, x);
#endif
}

// sigmoid(x) = 0.5 tanh(x / 2) + 0.5, the form of ops::SigmoidForward.
XTRAIN_HOST_DEVICE inline float cell_sigmoid(float x) { return 0.5f * cell_tanh(0.5f * x) + 0.5f; }

}  // namespace xtrain::ops

// Normal draws from two uniform 32-bit words (Box-Muller), computed so that
// the CPU (g++, glibc) and the GPU (nvcc) give the same bits.
//
//   u = ((w0 >> 8) + 1) / 2^24 in (0, 1],  t = (w1 >> 8) / 2^24 in [0, 1)
//   r = sqrt(-2 ln u),  (z0, z1) = (r cos 2 pi t, r sin 2 pi t)
//
// glibc's and CUDA's logf, sinf and cosf differ in the last bits, so neither
// is called: ln and the sine and cosine below use only operations that IEEE
// 754 rounds correctly on both sides (+, -, *, /, sqrt, fma, integer <->
// float conversions), each spelled as a function on the GPU (__fmul_rn and
// friends are never contracted into FMA, whatever nvcc's flags) and free of a
// product feeding an addition on the CPU (so a compiler contracting a * b + c
// into FMA finds nothing to contract). So the GPU/CPU agreement is bit for
// bit, with no tolerance (the GPU instance of tests/dummy_data_layer_test.cpp
// compares the bits; it has not yet run on a GPU).
//
// Accuracy: ln within 2 ulp, sin and cos within 1e-7 (tests/philox_test.cpp);
// u >= 2^-24 bounds |z| by sqrt(48 ln 2) ~ 5.77, a tail of probability ~1e-8.
#pragma once

#include <cstdint>
#include <cstring>

#ifndef __CUDA_ARCH__
#include <cmath>
#endif

#include "core/float_bits.hpp"
#include "core/host_device.hpp"
#include "core/philox.hpp"

namespace xtrain {

namespace exact_float {

XTRAIN_HOST_DEVICE inline float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

XTRAIN_HOST_DEVICE inline float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

XTRAIN_HOST_DEVICE inline float div(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// a * b + c, rounded once.
XTRAIN_HOST_DEVICE inline float fma(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

XTRAIN_HOST_DEVICE inline float sqrt(float x) {
#ifdef __CUDA_ARCH__
  return __fsqrt_rn(x);
#else
  return std::sqrt(x);
#endif
}

// bits_of and float_of: core/float_bits.hpp.
using ::xtrain::bits_of;
using ::xtrain::float_of;

// ln x for a positive normal float x. With x = 2^e m, m in [sqrt(1/2),
// sqrt(2)), f = m - 1 (exact) and s = f / (2 + f):
//   ln m = 2 atanh s = 2 (s + s^3/3 + s^5/5 + ...),  |s| < 0.172,
// the series kept to s^11 (the next term is below 2^-34 of the sum), and
//   ln x = e ln2_hi + (e ln2_lo + ln m),  ln2_hi with 16 bits so e ln2_hi is exact.
XTRAIN_HOST_DEVICE inline float log(float x) {
  const std::uint32_t bits = bits_of(x);
  int exponent = static_cast<int>(bits >> 23) - 127;
  float m = float_of((bits & 0x007fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 0x1.6a09e6p+0f) {                                // float(sqrt 2)
    m = mul(m, 0.5f);
    exponent += 1;
  }
  const float f = add(m, -1.0f);
  const float s = div(f, add(f, 2.0f));
  const float z = mul(s, s);
  float series = fma(z, 0x1.745d18p-4f /* 1/11 */, 0x1.c71c72p-4f /* 1/9 */);
  series = fma(series, z, 0x1.24924ap-3f /* 1/7 */);
  series = fma(series, z, 0x1.99999ap-3f /* 1/5 */);
  series = fma(series, z, 0x1.555556p-2f /* 1/3 */);
  // s + s z series, doubled (exactly).
  const float log_m = mul(fma(s, mul(z, series), s), 2.0f);
  const float e = static_cast<float>(exponent);
  return fma(e, 0x1.62e4p-1f /* ln2_hi */, fma(e, 0x1.7f7d1cp-20f /* ln2_lo */, log_m));
}

struct SineCosine {
  float sine;
  float cosine;
};

// sin and cos of 2 pi t for t = turn / 2^24, turn < 2^24. The quarter turn
// (top 2 bits) is exact; the rest, folded to [0, pi/4] by sin(pi/2 - a) =
// cos a, goes to the Taylor polynomials to x^9 and x^10 (truncation < 2e-9).
XTRAIN_HOST_DEVICE inline SineCosine sincos_of_turn(std::uint32_t turn) {
  const std::uint32_t quarter = (turn >> 22) & 3u;
  std::uint32_t within = turn & 0x003fffffu;  // of 2^22 per quarter
  const bool folded = within > (1u << 21);
  if (folded) within = (1u << 22) - within;
  // pi/2 / 2^22: float(pi/2) scaled exactly.
  const float x = mul(static_cast<float>(within), 0x1.921fb6p-22f);
  const float x2 = mul(x, x);
  float sine_series = fma(x2, 0x1.71de3ap-19f /* 1/9! */, -0x1.a01a02p-13f /* 1/7! */);
  sine_series = fma(sine_series, x2, 0x1.111112p-7f /* 1/5! */);
  sine_series = fma(sine_series, x2, -0x1.555556p-3f /* 1/3! */);
  const float sine = fma(mul(x, x2), sine_series, x);
  float cosine_series = fma(x2, -0x1.27e4fcp-22f /* 1/10! */, 0x1.a01a02p-16f /* 1/8! */);
  cosine_series = fma(cosine_series, x2, -0x1.6c16c2p-10f /* 1/6! */);
  cosine_series = fma(cosine_series, x2, 0x1.555556p-5f /* 1/4! */);
  cosine_series = fma(cosine_series, x2, -0.5f);
  const float cosine = fma(x2, cosine_series, 1.0f);
  const float s = folded ? cosine : sine;
  const float c = folded ? sine : cosine;
  switch (quarter) {
    case 0:
      return SineCosine{s, c};
    case 1:
      return SineCosine{c, -s};
    case 2:
      return SineCosine{-s, -c};
    default:
      return SineCosine{-c, s};
  }
}

}  // namespace exact_float

struct NormalPair {
  float first;
  float second;
};

// Two independent N(0, 1) draws from two uniform words (see the top).
XTRAIN_HOST_DEVICE inline NormalPair box_muller(std::uint32_t radius_bits,
                                                std::uint32_t angle_bits) {
  const float u = uniform_open_at_zero(radius_bits);
  const float radius = exact_float::sqrt(exact_float::mul(exact_float::log(u), -2.0f));
  const exact_float::SineCosine angle = exact_float::sincos_of_turn(angle_bits >> 8);
  return NormalPair{exact_float::mul(radius, angle.cosine), exact_float::mul(radius, angle.sine)};
}

}  // namespace xtrain

#include "core/sixteen_bit_packing.hpp"

#include "core/cpu_isa.hpp"
#include "core/float_bits.hpp"
#include "core/number_rounding.hpp"
#include "xtrain/error.hpp"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>
#define XTRAIN_HAVE_VECTOR_PACKING 1
#endif

namespace xtrain {

std::uint16_t bfloat16_bits_of(float x) {
  return static_cast<std::uint16_t>(bits_of(ops::RoundToBfloat16{}(x)) >> 16);
}

float float_of_bfloat16_bits(std::uint16_t bits) {
  return float_of(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float16_bits_of(float x) {
  // x rounded to fp16 is exactly representable there: only its fields move.
  const std::uint32_t rounded = bits_of(ops::RoundToFloat16{}(x));
  const auto sign = static_cast<std::uint16_t>((rounded >> 16) & 0x8000u);
  const std::uint32_t magnitude = rounded & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;  // nan, quiet
  if (magnitude == 0x7f800000u) return sign | 0x7c00u;  // infinity
  if (magnitude >= 0x38800000u) {                       // normal: from 2^-14
    const std::uint32_t exponent = (magnitude >> 23) - 127 + 15;
    return static_cast<std::uint16_t>(sign | (exponent << 10) | ((magnitude >> 13) & 0x3ffu));
  }
  // Subnormal (or zero): a whole number of 2^-24, below 2^10 of them.
  const float units = float_of(magnitude) * 16777216.0f;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(units));
}

float float_of_float16_bits(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu;
  const std::uint32_t fraction = bits & 0x3ffu;
  if (exponent == 0x1fu) return float_of(sign | 0x7f800000u | (fraction << 13));
  if (exponent == 0) {
    const float magnitude = static_cast<float>(fraction) * (1.0f / 16777216.0f);
    return float_of(sign | bits_of(magnitude));
  }
  return float_of(sign | ((exponent - 15 + 127) << 23) | (fraction << 13));
}

namespace {

void pack_bfloat16_portably(const float* in, std::uint16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = bfloat16_bits_of(in[i]);
}
void unpack_bfloat16_portably(const std::uint16_t* in, float* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = float_of_bfloat16_bits(in[i]);
}

#ifdef XTRAIN_HAVE_VECTOR_PACKING
// The same loops, vectorised by the compiler for 16 lanes.
__attribute__((target("avx512f,avx512bw"))) void pack_bfloat16_avx512(const float* in,
                                                                      std::uint16_t* out,
                                                                      std::size_t count) {
  pack_bfloat16_portably(in, out, count);
}
__attribute__((target("avx512f,avx512bw"))) void unpack_bfloat16_avx512(const std::uint16_t* in,
                                                                        float* out,
                                                                        std::size_t count) {
  unpack_bfloat16_portably(in, out, count);
}
__attribute__((target("avx2"))) void pack_bfloat16_avx2(const float* in, std::uint16_t* out,
                                                        std::size_t count) {
  pack_bfloat16_portably(in, out, count);
}
__attribute__((target("avx2"))) void unpack_bfloat16_avx2(const std::uint16_t* in, float* out,
                                                          std::size_t count) {
  unpack_bfloat16_portably(in, out, count);
}

// F16C (every AVX2 CPU has it) converts 8 at a time, to nearest even
// (immediate 0): exactly RoundToFloat16, then the bits.
__attribute__((target("avx2,f16c"))) void pack_float16_f16c(const float* in, std::uint16_t* out,
                                                            std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), halves);
  }
  for (; i < count; ++i) out[i] = float16_bits_of(in[i]);
}
__attribute__((target("avx2,f16c"))) void unpack_float16_f16c(const std::uint16_t* in, float* out,
                                                              std::size_t count) {
  std::size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(halves));
  }
  for (; i < count; ++i) out[i] = float_of_float16_bits(in[i]);
}
#endif

}  // namespace

void pack_to_16_bits(NumberType type, const float* in, std::uint16_t* out, std::size_t count) {
  XTRAIN_ASSERT(type == NumberType::kBfloat16 || type == NumberType::kFloat16,
                "16-bit packing of a type that is not 16 bits");
#ifdef XTRAIN_HAVE_VECTOR_PACKING
  const CpuIsa isa = cpu_isa();
  if (type == NumberType::kFloat16 && isa >= CpuIsa::kAvx2) {
    return pack_float16_f16c(in, out, count);
  }
  if (type == NumberType::kBfloat16 && isa >= CpuIsa::kAvx512) {
    return pack_bfloat16_avx512(in, out, count);
  }
  if (type == NumberType::kBfloat16 && isa >= CpuIsa::kAvx2) {
    return pack_bfloat16_avx2(in, out, count);
  }
#endif
  if (type == NumberType::kFloat16) {
    for (std::size_t i = 0; i < count; ++i) out[i] = float16_bits_of(in[i]);
    return;
  }
  pack_bfloat16_portably(in, out, count);
}

void unpack_16_bits(NumberType type, const std::uint16_t* in, float* out, std::size_t count) {
  XTRAIN_ASSERT(type == NumberType::kBfloat16 || type == NumberType::kFloat16,
                "16-bit unpacking of a type that is not 16 bits");
#ifdef XTRAIN_HAVE_VECTOR_PACKING
  const CpuIsa isa = cpu_isa();
  if (type == NumberType::kFloat16 && isa >= CpuIsa::kAvx2) {
    return unpack_float16_f16c(in, out, count);
  }
  if (type == NumberType::kBfloat16 && isa >= CpuIsa::kAvx512) {
    return unpack_bfloat16_avx512(in, out, count);
  }
  if (type == NumberType::kBfloat16 && isa >= CpuIsa::kAvx2) {
    return unpack_bfloat16_avx2(in, out, count);
  }
#endif
  if (type == NumberType::kFloat16) {
    for (std::size_t i = 0; i < count; ++i) out[i] = float_of_float16_bits(in[i]);
    return;
  }
  unpack_bfloat16_portably(in, out, count);
}

}  // namespace xtrain

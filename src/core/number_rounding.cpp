#include "core/number_rounding.hpp"

#include <algorithm>
#include <cstddef>

#include "core/cpu_isa.hpp"
#include "core/device_apply.hpp"
#include "core/parallel_loop.hpp"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#include <immintrin.h>
#define XTRAIN_HAVE_F16C_COPIES 1
#endif

namespace xtrain {
namespace {

// Values one parallel chunk rounds: a few hundred KiB, so that a thread's
// share streams through its caches once.
constexpr std::size_t kChunk = 1 << 16;

template <typename RoundChunk>
void for_each_chunk(const float* in, float* out, std::size_t count, RoundChunk round_chunk) {
  const auto chunks = static_cast<std::int64_t>((count + kChunk - 1) / kChunk);
  parallel_for(chunks, kChunk, [&](std::int64_t chunk) {
    const std::size_t begin = static_cast<std::size_t>(chunk) * kChunk;
    const std::size_t length = std::min(kChunk, count - begin);
    round_chunk(in + begin, out + begin, length);
  });
}

template <typename Round>
void round_chunk_portably(const float* in, float* out, std::size_t length) {
  const Round round;
  for (std::size_t i = 0; i < length; ++i) out[i] = round(in[i]);
}

#ifdef XTRAIN_HAVE_F16C_COPIES
// F16C (every AVX2 CPU has it): 8 floats to fp16 and back per instruction
// pair, rounding to nearest even (immediate 0), exactly RoundToFloat16.
__attribute__((target("avx2,f16c"))) void round_chunk_to_float16_f16c(const float* in, float* out,
                                                                      std::size_t length) {
  std::size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(halves));
  }
  round_chunk_portably<ops::RoundToFloat16>(in + i, out + i, length - i);
}

// AVX-512: the bf16 rounding, 16 lanes at a time (the portable loop, which
// GCC vectorises for the baseline's 4 lanes only).
__attribute__((target("avx512f"))) void round_chunk_to_bfloat16_avx512(const float* in, float* out,
                                                                       std::size_t length) {
  round_chunk_portably<ops::RoundToBfloat16>(in, out, length);
}
#endif

using RoundChunk = void (*)(const float*, float*, std::size_t);

// The fastest way this CPU has to round a run to `type` (16-bit).
RoundChunk chunk_rounding(NumberType type) {
  if (type == NumberType::kFloat16) {
#ifdef XTRAIN_HAVE_F16C_COPIES
    if (cpu_isa() >= CpuIsa::kAvx2) return round_chunk_to_float16_f16c;
#endif
    return round_chunk_portably<ops::RoundToFloat16>;
  }
#ifdef XTRAIN_HAVE_F16C_COPIES
  if (cpu_isa() >= CpuIsa::kAvx512) return round_chunk_to_bfloat16_avx512;
#endif
  return round_chunk_portably<ops::RoundToBfloat16>;
}

void round_on_cpu(NumberType type, const float* in, float* out, std::size_t count) {
  for_each_chunk(in, out, count, chunk_rounding(type));
}

}  // namespace

void round_into(const Device& device, NumberType type, const float* in, float* out,
                std::size_t count) {
  if (count == 0) return;
  if (device.is_gpu()) {
    if (type == NumberType::kFloat32) {
      if (in != out) ops::apply_on(device, count, ops::ScaleBy{1.0f}, out, in);
      return;
    }
    if (type == NumberType::kFloat16) {
      ops::apply_on(device, count, ops::RoundToFloat16{}, out, in);
    } else {
      ops::apply_on(device, count, ops::RoundToBfloat16{}, out, in);
    }
    return;
  }
  if (type == NumberType::kFloat32) {
    if (in != out) std::copy(in, in + count, out);
    return;
  }
  round_on_cpu(type, in, out, count);
}

void round_in_place(const Device& device, NumberType type, float* values, std::size_t count) {
  round_into(device, type, values, values, count);
}

void round_run_in_place(NumberType type, float* values, std::size_t count) {
  if (type == NumberType::kFloat32 || count == 0) return;
  chunk_rounding(type)(values, values, count);
}

}  // namespace xtrain

// Rounding a float to the nearest value of a 16-bit type and back, the one
// definition of "stored in bf16 / fp16" that the CPU loops and the CUDA
// kernels share (xtrain/precision.hpp). Round to nearest, ties to even, as
// the hardware conversions (AVX512-BF16's vcvtneps2bf16, F16C's vcvtps2ph,
// CUDA's __float2bfloat16_rn / __float2half_rn) round:
//
//   RoundToBfloat16(x): x with its 16 low bits rounded away (8-bit
//     significand, fp32's exponent range); nan stays nan, and values past
//     bf16's largest (3.39e38) become infinity.
//   RoundToFloat16(x): x to 11 significant bits; past 65504 (from 65520 up,
//     where the tie goes to the even infinity) it is infinity, below 2^-14 it
//     is a multiple of 2^-24 (fp16's subnormals), below 2^-25 zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/float_bits.hpp"
#include "core/host_device.hpp"
#include "xtrain/device.hpp"
#include "xtrain/precision.hpp"

#ifdef __CUDACC__
#include <cuda_runtime.h>
#else
#include <cmath>
#endif

namespace xtrain::ops {

struct RoundToBfloat16 {
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    const std::uint32_t bits = bits_of(x);
    const bool is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
    // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
    // a carry moves into the exponent as it should. A nan is made quiet
    // first, so that cutting its low bits cannot leave an infinity.
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
    return float_of(is_nan ? ((bits | 0x00400000u) & 0xffff0000u) : rounded);
  }
};

struct RoundToFloat16 {
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    const std::uint32_t bits = bits_of(x);
    const std::uint32_t sign = bits & 0x80000000u;
    const std::uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return x;  // nan
    // 65520 (0x477ff000) and up round to infinity: the tie at 65520 goes to
    // the even neighbour, which is infinity (65504's significand is odd).
    if (magnitude >= 0x477ff000u) return float_of(sign | 0x7f800000u);
    if (magnitude >= 0x38800000u) {  // fp16's normal range, from 2^-14
      // Round the 23-bit significand to 10 bits (13 dropped), ties to even.
      const std::uint32_t rounded = (magnitude + 0xfffu + ((magnitude >> 13) & 1u)) & 0xffffe000u;
      return float_of(sign | rounded);
    }
    // Subnormal: a multiple of 2^-24. Scaling by 2^24 is exact, and rintf
    // rounds to nearest even in the default rounding mode.
    const float units = rintf(float_of(magnitude) * 16777216.0f);
    return float_of(sign | bits_of(units * (1.0f / 16777216.0f)));
  }
};

}  // namespace xtrain::ops

namespace xtrain {

// Rounds `count` floats in place to `type` (nothing for kFloat32), on the
// device they live on; on the CPU with the hardware conversions where the
// CPU has them (F16C for fp16), which give the functors' exact results.
void round_in_place(const Device& device, NumberType type, float* values, std::size_t count);

// The same on the host, on the calling thread alone: for a run inside a
// layer's own parallel loop (no parallel region per call).
void round_run_in_place(NumberType type, float* values, std::size_t count);

// The same, copying: out[i] = round(in[i]) (out may equal in).
void round_into(const Device& device, NumberType type, const float* in, float* out,
                std::size_t count);

}  // namespace xtrain

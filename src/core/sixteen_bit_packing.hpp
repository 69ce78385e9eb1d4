// Values of a 16-bit type held in 16 bits: the float rounded to the type
// (core/number_rounding.hpp's functors: to nearest, ties to even) and its
// bf16 or IEEE fp16 bit pattern kept; unpacking gives that rounded float
// back exactly. For values a layer keeps between forward and backward in a
// net that stores its activations in bf16 or fp16 (core/kept_activation.hpp):
// they are of the type already, so half the bytes lose nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xtrain/precision.hpp"

namespace xtrain {

// out[i] = the bits of in[i] rounded to `type` (kBfloat16 or kFloat16).
// Serial: callers run it on one thread's part of an array.
void pack_to_16_bits(NumberType type, const float* in, std::uint16_t* out, std::size_t count);

// out[i] = the float whose bits in[i] are in `type` (exact).
void unpack_16_bits(NumberType type, const std::uint16_t* in, float* out, std::size_t count);

// One value each way, portably (the reference of the vector loops above).
std::uint16_t bfloat16_bits_of(float x);
std::uint16_t float16_bits_of(float x);
float float_of_bfloat16_bits(std::uint16_t bits);
float float_of_float16_bits(std::uint16_t bits);

}  // namespace xtrain

// A float's bits and back, the same on the CPU and in CUDA kernels: for the
// math that works on the representation (the exact logarithm of Box-Muller,
// rounding to bf16 and fp16).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace xtrain {

XTRAIN_HOST_DEVICE inline std::uint32_t bits_of(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

XTRAIN_HOST_DEVICE inline float float_of(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

}  // namespace xtrain

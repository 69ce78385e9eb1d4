// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw
// ("Parallel random numbers: as easy as 1, 2, 3", SC11): a keyed bijection of
// a 128-bit counter, so draw number c of stream k is philox(c, k), computed
// in O(1) by any thread on any device with the same bits.
//
// One round maps the counter words (x0, x1, x2, x3) with key (k0, k1) to
//   (hi(M1 x2) ^ x1 ^ k0,  lo(M1 x2),  hi(M0 x0) ^ x3 ^ k1,  lo(M0 x0))
// where hi/lo are the halves of the 64-bit product, M0 = 0xD2511F53 and
// M1 = 0xCD9E8D57. Ten rounds; between two rounds the key is bumped by the
// Weyl constants (k0 += 0x9E3779B9, k1 += 0xBB67AE85). Checked against
// Random123's known-answer vectors in tests/philox_test.cpp.
//
// The output words become floats by their top 24 bits, exactly (no rounding,
// so the CPU and the GPU agree bit for bit):
//   uniform_from_bits(w)          = (w >> 8) / 2^24         in [0, 1)
//   uniform_open_at_zero(w)       = ((w >> 8) + 1) / 2^24   in (0, 1]
#pragma once

#include <cstdint>

#include "core/host_device.hpp"

namespace xtrain {

struct Philox4x32Block {
  std::uint32_t word[4];
};

struct Philox4x32Key {
  std::uint32_t word[2];
};

// The key made of a 64-bit seed: low word first.
XTRAIN_HOST_DEVICE inline Philox4x32Key philox_key(std::uint64_t seed) {
  return Philox4x32Key{{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
}

namespace philox_detail {

constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr std::uint32_t kKeyIncrement0 = 0x9E3779B9u;
constexpr std::uint32_t kKeyIncrement1 = 0xBB67AE85u;
constexpr int kRounds = 10;

XTRAIN_HOST_DEVICE inline Philox4x32Block round(const Philox4x32Block& x, std::uint32_t key0,
                                                std::uint32_t key1) {
  const std::uint64_t product0 = static_cast<std::uint64_t>(kMultiplier0) * x.word[0];
  const std::uint64_t product1 = static_cast<std::uint64_t>(kMultiplier1) * x.word[2];
  return Philox4x32Block{{static_cast<std::uint32_t>(product1 >> 32) ^ x.word[1] ^ key0,
                          static_cast<std::uint32_t>(product1),
                          static_cast<std::uint32_t>(product0 >> 32) ^ x.word[3] ^ key1,
                          static_cast<std::uint32_t>(product0)}};
}

}  // namespace philox_detail

XTRAIN_HOST_DEVICE inline Philox4x32Block philox4x32_10(Philox4x32Block counter,
                                                        Philox4x32Key key) {
  std::uint32_t key0 = key.word[0];
  std::uint32_t key1 = key.word[1];
  counter = philox_detail::round(counter, key0, key1);
  for (int r = 1; r < philox_detail::kRounds; ++r) {
    key0 += philox_detail::kKeyIncrement0;
    key1 += philox_detail::kKeyIncrement1;
    counter = philox_detail::round(counter, key0, key1);
  }
  return counter;
}

// Exact conversions: a 24-bit integer and a power of two are floats.
XTRAIN_HOST_DEVICE inline float uniform_from_bits(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * 0x1p-24f;
}

XTRAIN_HOST_DEVICE inline float uniform_open_at_zero(std::uint32_t bits) {
  return static_cast<float>((bits >> 8) + 1u) * 0x1p-24f;
}

}  // namespace xtrain

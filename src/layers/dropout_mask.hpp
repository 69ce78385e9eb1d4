// Dropout masks by item, so that data-parallel replicas draw the masks one
// net with their combined batch would draw.
//
// Per forward the layer draws one 64-bit value v from its random stream (the
// same on every replica, and saved with the stream for exact resume). Item g
// of the global batch (the local item j of replica (index, count) with local
// batch B is g = index * B + j) gets the seed s_g = derive_seed(v, "item", g),
// and its element e is kept when the (e + 1)-th output of the SplitMix64
// stream seeded with s_g, taken as a 32-bit fraction, is below p = 1 - ratio:
//   z = mix64(s_g + (e + 1) * 0x9e3779b97f4a7c15),  m = (z >> 32) < round(p * 2^32)
// A counter-based stream: any element is drawn in O(1), independently, so
// the mask is the same for any number of threads (and a GPU kernel could
// draw it with the same functor).
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace xtrain {

struct DropoutKeep {
  std::uint64_t item_seed = 0;
  std::uint64_t threshold = 0;  // round(p * 2^32): 2^32 keeps everything

  XTRAIN_HOST_DEVICE unsigned operator()(std::uint64_t element) const {
    std::uint64_t z = item_seed + (element + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (z >> 32) < threshold ? 1u : 0u;
  }
};

// The threshold for keep probability p in [0, 1].
inline std::uint64_t dropout_keep_threshold(double keep_probability) {
  return static_cast<std::uint64_t>(std::llround(keep_probability * 4294967296.0));
}

}  // namespace xtrain

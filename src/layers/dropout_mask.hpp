// Dropout masks by item, so that data-parallel replicas draw the masks one
// net with their combined batch would draw, and the CPU loop and the CUDA
// kernel draw the same bits.
//
// Per forward the layer draws one 64-bit value v from its random stream (the
// same on every replica, and saved with the stream for exact resume); v is
// the Philox4x32-10 key (src/core/philox.hpp). Item g of the global batch
// (the local item j of replica (index, count) with local batch B is
// g = index * B + j) has its elements in blocks of four: element e is word
// e mod 4 of
//   w = philox4x32_10(counter = (b mod 2^32, b div 2^32, g mod 2^32, g div 2^32),
//                     key = (v mod 2^32, v div 2^32)),   b = e div 4,
// and is kept when that word is below the threshold t = round(p * 2^32) of
// the keep probability p = 1 - ratio (rounded once, at setup):
//   m_e = [w_(e mod 4) < t]    (t = 2^32 keeps everything)
// An integer comparison: the GPU's mask is the CPU's, bit for bit. Counter-
// based: any block is drawn in O(1), independently, so the mask is the same
// for any number of threads or shards.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"
#include "core/philox.hpp"

namespace xtrain {

struct DropoutMask {
  Philox4x32Key key;
  std::uint64_t threshold = 0;  // round(p * 2^32): 2^32 keeps everything

  // The four draws of block `block` of global item `item`.
  XTRAIN_HOST_DEVICE Philox4x32Block draws(std::uint64_t item, std::uint64_t block) const {
    const Philox4x32Block counter{
        {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
         static_cast<std::uint32_t>(item), static_cast<std::uint32_t>(item >> 32)}};
    return philox4x32_10(counter, key);
  }

  XTRAIN_HOST_DEVICE unsigned keep(std::uint32_t draw) const { return draw < threshold ? 1u : 0u; }

  // The entries 4 * block .. 4 * block + 3 (those below per_item) of the mask
  // of global item `item`, item_mask[0..per_item).
  XTRAIN_HOST_DEVICE void draw_block(std::uint64_t item, std::uint64_t block, unsigned* item_mask,
                                     std::size_t per_item) const {
    const Philox4x32Block w = draws(item, block);
    const std::size_t first = static_cast<std::size_t>(block) * 4;
    for (std::size_t k = 0; k < 4 && first + k < per_item; ++k) {
      item_mask[first + k] = keep(w.word[k]);
    }
  }
};

// The threshold for keep probability p in [0, 1].
inline std::uint64_t dropout_keep_threshold(double keep_probability) {
  return static_cast<std::uint64_t>(std::llround(keep_probability * 4294967296.0));
}

}  // namespace xtrain

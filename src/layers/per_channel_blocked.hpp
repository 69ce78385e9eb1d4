// What BatchNorm, Scale and Bias share when they compute in the
// channel-blocked layout (core/channel_blocked_layout.hpp): the loop over the
// (sample, channel block) blocks, and the choice of layout.
//
// A per-channel layer works on one block at a time: spatial vectors of B
// lanes (B = 8 or 16, core/channel_blocked_layout.hpp), lane l being channel
// first_channel + l. Its plain path keeps one sum per (sample, channel) plane
// at n * channels + c; a block's B sums are the B consecutive entries from
// n * channels + first_channel, so both paths fill the same array and add it
// up over the samples with the same code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "core/parallel_loop.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

// body(lanes, n, first_channel, offset) for every block, whose B * spatial
// values start at `offset`, spread over the thread pool (each block is one
// body call, so what a block computes does not depend on the thread count).
// `lanes` is std::integral_constant<int, B>, so that a generic lambda's
// loops have a width known at compile time (decltype(lanes)::value); the
// body is compiled for both widths. `work_per_value`: roughly the float
// operations per value.
template <int B, typename Body>
inline void for_each_channel_block_of(const ChannelBlockedShape& shape, std::size_t work_per_value,
                                      Body& body) {
  const std::int64_t blocks_per_sample = shape.channels / B;
  const auto block_size = static_cast<std::size_t>(shape.spatial) * B;
  parallel_for(shape.blocks(), block_size * work_per_value, [&](std::int64_t block) {
    body(std::integral_constant<int, B>{}, static_cast<int>(block / blocks_per_sample),
         static_cast<int>(block % blocks_per_sample) * B,
         static_cast<std::size_t>(block) * block_size);
  });
}

template <typename Body>
inline void for_each_channel_block(const ChannelBlockedShape& shape, std::size_t work_per_value,
                                   Body body) {
  XTRAIN_ASSERT(shape.block == 8 || shape.block == 16, "channel blocks of ", shape.block);
  if (shape.block == 16) {
    for_each_channel_block_of<16>(shape, work_per_value, body);
  } else {
    for_each_channel_block_of<8>(shape, work_per_value, body);
  }
}

// The layout a per-channel layer computes its forward pass in, when it can
// compute channel-blocked at all: in place, the blob's; out of place, the
// one the Net chose for its top (the bottom is converted if it differs).
inline MemoryLayout per_channel_forward_layout(bool supported, bool in_place, const Blob& bottom,
                                               const Blob& top, bool top_blocked) {
  if (!supported) return MemoryLayout::kPlain;
  if (in_place) return bottom.data_layout();
  return top_blocked && top.can_be_channel_blocked() ? MemoryLayout::kChannelBlocked
                                                     : MemoryLayout::kPlain;
}

// Backward: in place, the layout the top's gradient arrives in; out of
// place, forward's.
inline MemoryLayout per_channel_backward_layout(bool supported, bool in_place, const Blob& top,
                                                MemoryLayout forward_layout) {
  if (!supported) return MemoryLayout::kPlain;
  return in_place ? top.diff_layout() : forward_layout;
}

// The blocked geometry of a 4-axis blob (channels a multiple of
// channel_block()).
inline ChannelBlockedShape channel_blocked_shape(const Blob& blob) {
  return {blob.shape(0), blob.shape(1), static_cast<std::int64_t>(blob.shape(2)) * blob.shape(3)};
}

}  // namespace xtrain

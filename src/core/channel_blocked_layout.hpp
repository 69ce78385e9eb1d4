// The channel-blocked activation layout: oneDNN's nChw16c ("aBcd16b").
//
// A 4-axis blob (num, channels, height, width) with channels a multiple of
// 16 is stored as num x (channels / 16) blocks; a block holds its 16
// channels interleaved, one 16-float vector per spatial position:
//   value (n, c, s) at ((n * channels / 16 + c / 16) * spatial + s) * 16 + c % 16
// with s = h * width + w. The count is the plain one (no padding), so a blob
// can hold either layout in the same storage.
//
// oneDNN's convolutions compute in this layout; keeping activations in it
// between a convolution and its pooling, ReLU and next convolution saves two
// reorders per boundary, and a per-channel kernel (pooling) gets one vector
// register per spatial position for free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xtrain {

constexpr int kChannelBlock = 16;

// Whether a blob of this many channels can be kept channel-blocked.
inline bool channels_can_be_blocked(int channels) {
  return channels > 0 && channels % kChannelBlock == 0;
}

struct ChannelBlockedShape {
  std::int64_t num = 0;
  std::int64_t channels = 0;  // a multiple of kChannelBlock
  std::int64_t spatial = 0;   // height * width

  std::int64_t blocks() const { return num * (channels / kChannelBlock); }
  std::size_t count() const { return static_cast<std::size_t>(num * channels * spatial); }
  // Where plain element (n, c, s) lives in the blocked layout.
  std::size_t blocked_index(std::int64_t n, std::int64_t c, std::int64_t s) const {
    return static_cast<std::size_t>(
        ((n * (channels / kChannelBlock) + c / kChannelBlock) * spatial + s) * kChannelBlock +
        c % kChannelBlock);
  }
};

// Out of place; the arrays must not overlap. Parallel over blocks.
void plain_to_channel_blocked(const ChannelBlockedShape& shape, const float* plain, float* blocked);
void channel_blocked_to_plain(const ChannelBlockedShape& shape, const float* blocked, float* plain);

}  // namespace xtrain

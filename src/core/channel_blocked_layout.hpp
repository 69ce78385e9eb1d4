// The channel-blocked activation layout: oneDNN's nChw16c ("aBcd16b") or
// nChw8c ("aBcd8b"), B = channel_block() channels per block.
//
// A 4-axis blob (num, channels, height, width) with channels a multiple of
// B is stored as num x (channels / B) blocks; a block holds its B channels
// interleaved, one B-float vector per spatial position:
//   value (n, c, s) at ((n * channels / B + c / B) * spatial + s) * B + c % B
// with s = h * width + w. The count is the plain one (no padding), so a blob
// can hold either layout in the same storage.
//
// oneDNN's convolutions compute in this layout; keeping activations in it
// between a convolution and its pooling, ReLU and next convolution saves two
// reorders per boundary, and a per-channel kernel (pooling) gets one vector
// register per spatial position for free. B follows the width of oneDNN's
// kernels: 16 floats (one zmm) at AVX-512, 8 (one ymm) at AVX2 and below.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xtrain {

// Channels per block in this process: 16 where oneDNN's kernels run at
// AVX-512 (after ONEDNN_MAX_CPU_ISA or XTRAIN_MAX_CPU_ISA), else 8, so that
// it is the layout oneDNN's convolutions compute in. Decided at the first
// call.
int channel_block();

// For tests, which run every kernel at both widths on any CPU: 8 or 16
// channels per block from now on, or 0 for the decided width again. Change it
// only between nets: blobs stored blocked remember the width they were
// written in (BlockedGeometry::block), layers do not.
void set_channel_block_for_testing(int block);

// Whether a blob of this many channels can be kept channel-blocked.
inline bool channels_can_be_blocked(int channels) {
  return channels > 0 && channels % channel_block() == 0;
}

struct ChannelBlockedShape {
  std::int64_t num = 0;
  std::int64_t channels = 0;  // a multiple of block
  std::int64_t spatial = 0;   // height * width
  int block = channel_block();

  std::int64_t blocks() const { return num * (channels / block); }
  std::size_t count() const { return static_cast<std::size_t>(num * channels * spatial); }
  // Where plain element (n, c, s) lives in the blocked layout.
  std::size_t blocked_index(std::int64_t n, std::int64_t c, std::int64_t s) const {
    return static_cast<std::size_t>(((n * (channels / block) + c / block) * spatial + s) * block +
                                    c % block);
  }
};

// Out of place; the arrays must not overlap. Parallel over blocks.
void plain_to_channel_blocked(const ChannelBlockedShape& shape, const float* plain, float* blocked);
void channel_blocked_to_plain(const ChannelBlockedShape& shape, const float* blocked, float* plain);

}  // namespace xtrain

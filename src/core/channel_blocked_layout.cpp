#include "core/channel_blocked_layout.hpp"

#include "core/parallel_loop.hpp"

namespace xtrain {

// One block is a 16 x spatial transpose: plain rows (one per channel) become
// 16-float columns. Each block is one thread's.

void plain_to_channel_blocked(const ChannelBlockedShape& shape, const float* plain,
                              float* blocked) {
  const std::int64_t block_size = kChannelBlock * shape.spatial;
  parallel_for(shape.blocks(), static_cast<std::size_t>(block_size), [&](std::int64_t b) {
    const float* in = plain + b * block_size;
    float* out = blocked + b * block_size;
    for (std::int64_t s = 0; s < shape.spatial; ++s) {
      for (int lane = 0; lane < kChannelBlock; ++lane) {
        out[s * kChannelBlock + lane] = in[lane * shape.spatial + s];
      }
    }
  });
}

void channel_blocked_to_plain(const ChannelBlockedShape& shape, const float* blocked,
                              float* plain) {
  const std::int64_t block_size = kChannelBlock * shape.spatial;
  parallel_for(shape.blocks(), static_cast<std::size_t>(block_size), [&](std::int64_t b) {
    const float* in = blocked + b * block_size;
    float* out = plain + b * block_size;
    for (int lane = 0; lane < kChannelBlock; ++lane) {
      for (std::int64_t s = 0; s < shape.spatial; ++s) {
        out[lane * shape.spatial + s] = in[s * kChannelBlock + lane];
      }
    }
  });
}

}  // namespace xtrain

#include "core/channel_blocked_layout.hpp"

#include <atomic>

#include "core/cpu_isa.hpp"
#include "core/parallel_loop.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

std::atomic<int> block_for_testing{0};

}  // namespace

int channel_block() {
  const int forced = block_for_testing.load(std::memory_order_relaxed);
  if (forced != 0) return forced;
  static const int decided = onednn_cpu_isa() == CpuIsa::kAvx512 ? 16 : 8;
  return decided;
}

void set_channel_block_for_testing(int block) {
  XTRAIN_ASSERT(block == 0 || block == 8 || block == 16, "a channel block of ", block,
                " channels; 8 and 16 are supported");
  block_for_testing.store(block, std::memory_order_relaxed);
}

// One block is a B x spatial transpose: plain rows (one per channel) become
// B-float columns. Each block is one thread's.

void plain_to_channel_blocked(const ChannelBlockedShape& shape, const float* plain,
                              float* blocked) {
  const int lanes = shape.block;
  const std::int64_t block_size = lanes * shape.spatial;
  parallel_for(shape.blocks(), static_cast<std::size_t>(block_size), [&](std::int64_t b) {
    const float* in = plain + b * block_size;
    float* out = blocked + b * block_size;
    for (std::int64_t s = 0; s < shape.spatial; ++s) {
      for (int lane = 0; lane < lanes; ++lane) {
        out[s * lanes + lane] = in[lane * shape.spatial + s];
      }
    }
  });
}

void channel_blocked_to_plain(const ChannelBlockedShape& shape, const float* blocked,
                              float* plain) {
  const int lanes = shape.block;
  const std::int64_t block_size = lanes * shape.spatial;
  parallel_for(shape.blocks(), static_cast<std::size_t>(block_size), [&](std::int64_t b) {
    const float* in = blocked + b * block_size;
    float* out = plain + b * block_size;
    for (int lane = 0; lane < lanes; ++lane) {
      for (std::int64_t s = 0; s < shape.spatial; ++s) {
        out[lane * shape.spatial + s] = in[s * lanes + lane];
      }
    }
  });
}

}  // namespace xtrain

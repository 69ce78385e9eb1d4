// The host twin of the GPU's grid-wide reductions (src/cuda/grid_reduction.cuh):
// block and thread loops around the very functions the kernels call
// (core/reduction_tiling.hpp), line for line as in the .cuh, so that a CPU
// test computes what the kernels compute, in their order of additions
// (tests/grid_reduction_test.cpp, tests/normalize_embed_kernels_test.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "core/reduction_tiling.hpp"

namespace xtrain::testing {

using reduction::ChannelTiling;
using reduction::kThreads;
using reduction::Tile;

// cuda::DeviceBlockTotal with the threads as a loop.
struct HostBlockTotal {
  const ChannelTiling& tiling;
  Tile tile;
  template <typename Reduction>
  typename Reduction::Partial operator()(const Reduction& r) const {
    std::vector<typename Reduction::Partial> values(kThreads);
    for (unsigned t = 0; t < kThreads; ++t) {
      values[t] = reduction::thread_partial(tiling, tile, t, r);
    }
    for (unsigned half = kThreads / 2; half > 0; half /= 2) {
      for (unsigned t = 0; t < kThreads; ++t) reduction::tree_step(values.data(), half, t, r);
    }
    return values[0];
  }
};

// cuda::reduce_per_channel: each channel's total.
template <typename TileReducer>
std::vector<typename TileReducer::Partial> emulate(const ChannelTiling& tiling,
                                                   const TileReducer& reducer) {
  using Partial = typename TileReducer::Partial;
  std::vector<Partial> totals(tiling.channels, reducer.identity());
  std::vector<Partial> tile_partials(tiling.block_count(), reducer.identity());
  for (std::size_t block = 0; block < tiling.block_count(); ++block) {  // reduce_tiles_kernel
    const Tile tile = tiling.tile(block);
    HostBlockTotal block_total{tiling, tile};
    const Partial total = reducer.reduce_tile(tile, block_total);
    if (tiling.needs_combine()) {
      tile_partials[block] = total;
    } else {
      totals[tile.channel] = total;
    }
  }
  if (!tiling.needs_combine()) return totals;
  const std::size_t tiles = tiling.tiles_per_channel;
  for (std::size_t channel = 0; channel < tiling.channels; ++channel) {  // combine_tiles_kernel
    std::vector<Partial> values(kThreads);
    for (unsigned t = 0; t < kThreads; ++t) {
      values[t] = reduction::combined_thread_partial(tile_partials.data() + channel * tiles, tiles,
                                                     t, reducer);
    }
    for (unsigned half = kThreads / 2; half > 0; half /= 2) {
      for (unsigned t = 0; t < kThreads; ++t) reduction::tree_step(values.data(), half, t, reducer);
    }
    totals[channel] = values[0];
  }
  return totals;
}

// cuda::reduce_per_channel with its Finish: finish(channel, total) for
// every channel.
template <typename TileReducer, typename Finish>
void emulate_per_channel(const ChannelTiling& tiling, const TileReducer& reducer,
                         const Finish& finish) {
  if (tiling.channels == 0) return;
  const auto totals = emulate(tiling, reducer);
  for (std::size_t channel = 0; channel < tiling.channels; ++channel)
    finish(channel, totals[channel]);
}

}  // namespace xtrain::testing

// How the GPU's grid-wide reductions split their work and in what order they
// add it up, shared by the CUDA kernels (src/cuda/grid_reduction.cuh) and the
// CPU tests that emulate them (tests/grid_reduction_test.cpp).
//
// The array is (outer, channels, inner); value k of channel c (k in [0, m),
// m = outer * inner) is element (k / inner, c, k % inner). A flat array of n
// values is the case outer = channels = 1, inner = n.
//
// Stage 1: each channel's m values are cut into tiles_per_channel tiles of
// tile_values consecutive k (the last one shorter); one block of kThreads
// threads reduces a tile: thread t takes k = begin + t, begin + t + kThreads,
// ... in that order, then the threads' partials are folded pairwise in a
// fixed tree (tree_step). Stage 2 (only when a channel has several tiles):
// one block per channel folds that channel's tile partials, thread t taking
// tiles t, t + kThreads, ... and the same tree.
//
// The plan depends on the shape alone, never on the GPU it runs on, so the
// additions happen in the same order on every GPU and every run: the results
// are deterministic. It aims at ~kTargetBlocks stage-1 blocks (an H100 has
// 132 SMs, each running 8 blocks of 256 threads) but gives a tile at least
// kMinTileValues values, so a small array is not spread thin.
//
// Walking a tile needs no division per value: a thread divides once for its
// first k, then steps kThreads values on with a carry (Cursor, advance).
#pragma once

#include <cstddef>

#include "core/host_device.hpp"

namespace xtrain::reduction {

constexpr unsigned kThreads = 256;  // threads per block; a power of two (tree_step)
constexpr std::size_t kTargetBlocks = 1024;
constexpr std::size_t kMinTileValues = 2048;
static_assert((kThreads & (kThreads - 1)) == 0, "tree_step halves the block");

// Values [begin, end) of channel `channel`'s m values.
struct Tile {
  std::size_t channel;
  std::size_t begin;
  std::size_t end;
};

// Where value k of a channel is: its element offset and k % inner.
struct Cursor {
  std::size_t offset;
  std::size_t column;
};

XTRAIN_HOST_DEVICE inline std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

struct ChannelTiling {
  std::size_t outer = 0;
  std::size_t channels = 0;
  std::size_t inner = 0;
  std::size_t tiles_per_channel = 1;  // at least 1: an empty channel still has a (empty) tile
  std::size_t tile_values = 0;        // a multiple of kThreads
  // One step of a thread (kThreads values on): column += step_columns,
  // offset += step_offset, then a carry when column passes inner.
  std::size_t step_columns = 0;  // kThreads % inner
  std::size_t step_offset = 0;   // (kThreads / inner) * channels * inner + step_columns

  // The plan for a shape (host side; the kernels receive it by value).
  static ChannelTiling plan(std::size_t outer, std::size_t channels, std::size_t inner) {
    ChannelTiling tiling;
    tiling.outer = outer;
    tiling.channels = channels;
    tiling.inner = inner;
    const std::size_t m = outer * inner;
    if (channels == 0 || m == 0) return tiling;  // one empty tile per channel
    const std::size_t wanted = ceil_div(kTargetBlocks, channels);
    const std::size_t by_size = ceil_div(m, kMinTileValues);
    const std::size_t tiles = wanted < by_size ? wanted : by_size;
    tiling.tile_values = ceil_div(ceil_div(m, tiles), kThreads) * kThreads;
    tiling.tiles_per_channel = ceil_div(m, tiling.tile_values);  // none empty
    tiling.step_columns = kThreads % inner;
    tiling.step_offset = (kThreads / inner) * channels * inner + tiling.step_columns;
    return tiling;
  }

  XTRAIN_HOST_DEVICE std::size_t values_per_channel() const { return outer * inner; }
  // Stage-1 blocks: channel-major, tile b % tiles_per_channel of channel
  // b / tiles_per_channel.
  XTRAIN_HOST_DEVICE std::size_t block_count() const { return channels * tiles_per_channel; }
  // Stage 2 runs only when a channel has several tiles; with one, stage 1's
  // block holds the channel's total.
  XTRAIN_HOST_DEVICE bool needs_combine() const { return tiles_per_channel > 1; }

  XTRAIN_HOST_DEVICE Tile tile(std::size_t block) const {
    const std::size_t channel = block / tiles_per_channel;
    const std::size_t begin = (block - channel * tiles_per_channel) * tile_values;
    const std::size_t m = values_per_channel();
    const std::size_t end = begin + tile_values < m ? begin + tile_values : m;
    return {channel, begin, end};
  }

  XTRAIN_HOST_DEVICE Cursor cursor(std::size_t channel, std::size_t k) const {
    const std::size_t row = k / inner;
    const std::size_t column = k - row * inner;
    return {(row * channels + channel) * inner + column, column};
  }

  // The cursor of value k + kThreads (k + kThreads = (row + q) * inner +
  // column + r with q = kThreads / inner, r = kThreads % inner; when
  // column + r reaches inner, one more row and inner fewer columns).
  XTRAIN_HOST_DEVICE void advance(Cursor& at) const {
    at.column += step_columns;
    at.offset += step_offset;
    if (at.column >= inner) {
      at.column -= inner;
      at.offset += (channels - 1) * inner;
    }
  }
};

// Calls visit(tile.channel, offset) for thread `thread`'s values of the tile,
// in increasing k.
template <typename Visit>
XTRAIN_HOST_DEVICE void visit_thread_values(const ChannelTiling& tiling, const Tile& tile,
                                            unsigned thread, Visit& visit) {
  std::size_t k = tile.begin + thread;
  if (k >= tile.end) return;
  Cursor at = tiling.cursor(tile.channel, k);
  for (;;) {
    visit(tile.channel, at.offset);
    k += kThreads;
    if (k >= tile.end) return;
    tiling.advance(at);
  }
}

// A Reduction (the sums of src/core/reduction_terms.hpp) provides
//   Partial                                   trivially copyable
//   Partial identity() const
//   void add(Partial&, channel, offset) const  folds in element `offset`
//   Partial combine(const Partial&, const Partial&) const
// all XTRAIN_HOST_DEVICE (or __device__ for terms only a kernel can read).
template <typename Reduction>
struct Accumulate {
  const Reduction& reduction;
  typename Reduction::Partial partial;
  XTRAIN_HOST_DEVICE void operator()(std::size_t channel, std::size_t offset) {
    reduction.add(partial, channel, offset);
  }
};

// Thread `thread`'s partial of a tile (stage 1, before the tree).
template <typename Reduction>
XTRAIN_HOST_DEVICE typename Reduction::Partial thread_partial(const ChannelTiling& tiling,
                                                              const Tile& tile, unsigned thread,
                                                              const Reduction& reduction) {
  Accumulate<Reduction> accumulate{reduction, reduction.identity()};
  visit_thread_values(tiling, tile, thread, accumulate);
  return accumulate.partial;
}

// One level of the block's tree: for half = kThreads / 2, ..., 1 (every
// thread, then a barrier), thread t < half folds in thread t + half's value.
// values[0] ends with the block's total.
template <typename Partial, typename Reduction>
XTRAIN_HOST_DEVICE void tree_step(Partial* values, unsigned half, unsigned thread,
                                  const Reduction& reduction) {
  if (thread < half) values[thread] = reduction.combine(values[thread], values[thread + half]);
}

// Stage 2, thread `thread`'s share of a channel's tile partials (`count` of
// them): tiles thread, thread + kThreads, ... in order; then tree_step.
template <typename Reduction>
XTRAIN_HOST_DEVICE typename Reduction::Partial combined_thread_partial(
    const typename Reduction::Partial* tile_partials, std::size_t count, unsigned thread,
    const Reduction& reduction) {
  typename Reduction::Partial partial = reduction.identity();
  for (std::size_t t = thread; t < count; t += kThreads) {
    partial = reduction.combine(partial, tile_partials[t]);
  }
  return partial;
}

// What stage 1 computes for a tile, from block-wide totals. A TileReducer
// provides Partial, identity() and combine() (stage 2 folds its tiles'
// partials with them) and
//   template <typename BlockTotal>
//   Partial reduce_tile(const Tile&, BlockTotal& block_total) const
// where block_total(reduction) is the block's total of a Reduction over the
// tile (thread_partial, then the tree), the same value in every thread.
// Most reductions take one sweep; BatchNorm's moments take two (the tile's
// sum, then the squared deviations from the tile's mean).
template <typename Reduction>
struct SingleSweep {
  using Partial = typename Reduction::Partial;
  Reduction reduction;
  XTRAIN_HOST_DEVICE Partial identity() const { return reduction.identity(); }
  XTRAIN_HOST_DEVICE Partial combine(const Partial& a, const Partial& b) const {
    return reduction.combine(a, b);
  }
  template <typename BlockTotal>
  XTRAIN_HOST_DEVICE Partial reduce_tile(const Tile&, BlockTotal& block_total) const {
    return block_total(reduction);
  }
};

}  // namespace xtrain::reduction

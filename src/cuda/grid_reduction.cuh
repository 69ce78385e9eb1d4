// Grid-wide, deterministic per-channel reductions of an (outer, channels,
// inner) array, and of a flat array (outer = channels = 1): the two stages
// of core/reduction_tiling.hpp as kernels. Stage 1 writes one partial per
// tile to a scratch buffer (or, when a channel has a single tile, the
// channel's total straight to Finish); stage 2 folds each channel's tile
// partials in a fixed order. No atomics: the same input gives the same bits
// on every run and every GPU. Included by .cu files only.
//
// A Finish is a __device__ functor, finish(channel, total), called once per
// channel by one thread, after every value of the channel is in `total`.
#pragma once

#include <cstddef>

#include "core/device_memory.hpp"
#include "core/reduction_tiling.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {

// Shared memory per thread for the block's partials: the largest Partial
// (reduction::Moments, PositionTotals: 24 bytes).
constexpr std::size_t kPartialBytes = 32;

// Device memory for the tile partials, from the caching allocator (no
// cudaMalloc in a training loop's steady state). Freed at the end of the
// launcher, tagged with this thread's stream: the next user of the block on
// this stream runs after our kernels; one on another stream waits for it.
class ReductionScratch {
 public:
  explicit ReductionScratch(std::size_t bytes) {
    if (bytes > 0) data_ = device_memory::allocate(bytes, &device_);
  }
  ~ReductionScratch() { device_memory::free(data_, device_); }
  ReductionScratch(const ReductionScratch&) = delete;
  ReductionScratch& operator=(const ReductionScratch&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  int device_ = 0;
};

// block_total(reduction) inside a kernel: every thread's partial of the tile
// into shared memory, the tree of reduction::tree_step, then the total to
// every thread. Every thread of the block must call it (it has barriers).
struct DeviceBlockTotal {
  const reduction::ChannelTiling& tiling;
  reduction::Tile tile;
  void* shared;

  template <typename Reduction>
  __device__ typename Reduction::Partial operator()(const Reduction& r) const {
    using Partial = typename Reduction::Partial;
    static_assert(sizeof(Partial) <= kPartialBytes, "raise kPartialBytes");
    Partial* values = static_cast<Partial*>(shared);
    values[threadIdx.x] = reduction::thread_partial(tiling, tile, threadIdx.x, r);
    __syncthreads();
    for (unsigned half = reduction::kThreads / 2; half > 0; half /= 2) {
      reduction::tree_step(values, half, threadIdx.x, r);
      __syncthreads();
    }
    const Partial total = values[0];
    __syncthreads();  // everyone has read values[0] before the next call writes
    return total;
  }
};

// Stage 1: block b of the plan (grid-stride over blocks when there are more
// than a grid holds).
template <typename TileReducer, typename Finish>
__global__ void __launch_bounds__(reduction::kThreads)
    reduce_tiles_kernel(reduction::ChannelTiling tiling, TileReducer reducer,
                        typename TileReducer::Partial* tile_partials, Finish finish) {
  __shared__ double2 shared[kPartialBytes * reduction::kThreads / sizeof(double2)];
  const std::size_t blocks = tiling.block_count();
  for (std::size_t block = blockIdx.x; block < blocks; block += gridDim.x) {
    const reduction::Tile tile = tiling.tile(block);
    DeviceBlockTotal block_total{tiling, tile, shared};
    const typename TileReducer::Partial total = reducer.reduce_tile(tile, block_total);
    if (threadIdx.x == 0) {
      if (tiling.needs_combine()) {
        tile_partials[block] = total;
      } else {
        finish(tile.channel, total);
      }
    }
  }
}

// Stage 2: one block per channel folds its tiles_per_channel partials.
template <typename TileReducer, typename Finish>
__global__ void __launch_bounds__(reduction::kThreads)
    combine_tiles_kernel(std::size_t channels, std::size_t tiles, TileReducer reducer,
                         const typename TileReducer::Partial* tile_partials, Finish finish) {
  using Partial = typename TileReducer::Partial;
  static_assert(sizeof(Partial) <= kPartialBytes, "raise kPartialBytes");
  __shared__ double2 shared[kPartialBytes * reduction::kThreads / sizeof(double2)];
  Partial* values = reinterpret_cast<Partial*>(shared);
  for (std::size_t channel = blockIdx.x; channel < channels; channel += gridDim.x) {
    values[threadIdx.x] = reduction::combined_thread_partial(tile_partials + channel * tiles, tiles,
                                                             threadIdx.x, reducer);
    __syncthreads();
    for (unsigned half = reduction::kThreads / 2; half > 0; half /= 2) {
      reduction::tree_step(values, half, threadIdx.x, reducer);
      __syncthreads();
    }
    if (threadIdx.x == 0) finish(channel, values[0]);
    __syncthreads();  // values[0] read before the next channel writes
  }
}

// A grid of `blocks` blocks, within the limit of gridDim.x (the kernels
// stride over the rest).
inline unsigned reduction_grid(std::size_t blocks) {
  constexpr std::size_t kMaxGrid = 0x7fffffff;
  return static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid);
}

// Runs both stages on `stream` for the plan `tiling`: finish(channel, total)
// for every channel. Returns without waiting. A stream other than this
// thread's is waited for before the scratch goes back to the allocator.
template <typename TileReducer, typename Finish>
void reduce_per_channel(const reduction::ChannelTiling& tiling, const TileReducer& reducer,
                        const Finish& finish, cudaStream_t stream) {
  using Partial = typename TileReducer::Partial;
  if (tiling.channels == 0) return;
  const std::size_t blocks = tiling.block_count();
  if (!tiling.needs_combine()) {
    reduce_tiles_kernel<<<reduction_grid(blocks), reduction::kThreads, 0, stream>>>(
        tiling, reducer, static_cast<Partial*>(nullptr), finish);
    check_launch();
    return;
  }
  ReductionScratch scratch(blocks * sizeof(Partial));
  auto* tile_partials = static_cast<Partial*>(scratch.data());
  reduce_tiles_kernel<<<reduction_grid(blocks), reduction::kThreads, 0, stream>>>(
      tiling, reducer, tile_partials, finish);
  check_launch();
  combine_tiles_kernel<<<reduction_grid(tiling.channels), reduction::kThreads, 0, stream>>>(
      tiling.channels, tiling.tiles_per_channel, reducer, tile_partials, finish);
  check_launch();
  if (stream != cuda::stream()) XTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace xtrain::cuda

// Pooling on channel-blocked activations, blocks (one image, 16 channels) in
// parallel. Within a block every operation is a 16-lane vector operation,
// one lane per channel, so each lane runs the reference's scalar steps:
//
// MAX forward, per output, its window in row-major order:
//   gt = value > best;  best = gt ? value : best;  index = gt ? h * W + w : index
// from best = -FLT_MAX, index = -1: the first maximum, as in Caffe. Runs of
// kOutputGroup outputs whose windows have one shape go together, so that
// their independent compare-select chains overlap.
// AVE forward: sum += value in row-major order, then sum / (int) pool_size.
//
// Backward gathers instead of scattering: each input position sums the
// contributions of the outputs whose windows hold it, in increasing output
// order (y, then x) and starting from 0 -- the order in which the
// reference's "input_diff = 0; for each output: input_diff[...] += ..."
// adds them, so the sums are the same bits. For MAX an output contributes
// where its argmax is this position: acc = (mask == s) ? acc + diff : acc.
// Every input_diff value is written once, with no read-modify-write (a
// sweep adding into an L1-resident input row, as the plain AVE kernel does,
// measured 25% slower here).
//
// The per-block loops are compiled for AVX-512, AVX2 and baseline x86-64 by
// target_clones (libxtrain is built for the baseline; the loader picks the
// best clone at run time), GCC vector types of 16 lanes mapping onto one
// zmm register, two ymm or four xmm. Plain output (or output_diff) goes
// through a per-thread blocked buffer and a 16-plane transposition.
#include "layers/pooling_blocked_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "core/parallel_loop.hpp"
#include "xtrain/error.hpp"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define XTRAIN_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define XTRAIN_VECTOR_CLONES
#endif

namespace xtrain {
namespace {

typedef float Lanes __attribute__((vector_size(kChannelBlock * sizeof(float))));
typedef int LaneInts __attribute__((vector_size(kChannelBlock * sizeof(int))));

// MAX forward outputs computed side by side.
constexpr int kOutputGroup = 4;

// The outputs [begin, end) along one axis whose windows hold one input
// position.
struct CoveringOutputs {
  int begin;
  int end;
};

// Window bounds per output row and column, and for backward the outputs
// covering each input row and column. Windows begin and end
// non-decreasingly, so the outputs holding position i are the contiguous
// run with window end > i and window begin <= i.
struct BlockedPoolingPlan {
  const PoolingGeometry& g;
  std::int64_t blocks;
  std::size_t block_size;         // kChannelBlock * height * width
  std::size_t pooled_block_size;  // kChannelBlock * pooled_h * pooled_w
  std::vector<PoolingWindow> rows;
  std::vector<PoolingWindow> cols;
  std::vector<CoveringOutputs> covering_rows;
  std::vector<CoveringOutputs> covering_cols;
  // group_starts[x]: output columns x ... x + kOutputGroup - 1 have windows
  // of one width, `stride` apart, so they can be computed together.
  std::vector<char> group_starts;

  BlockedPoolingPlan(const PoolingGeometry& geometry, int channels, bool backward)
      : g(geometry),
        blocks(geometry.planes / kChannelBlock),
        block_size(static_cast<std::size_t>(kChannelBlock) * geometry.height * geometry.width),
        pooled_block_size(static_cast<std::size_t>(kChannelBlock) * geometry.pooled_h *
                          geometry.pooled_w) {
    XTRAIN_ASSERT(channels_can_be_blocked(channels) && g.planes % channels == 0,
                  "channel-blocked pooling needs a multiple of ", kChannelBlock,
                  " channels dividing the planes; got ", channels, " channels, ", g.planes,
                  " planes");
    for (int y = 0; y < g.pooled_h; ++y) {
      rows.push_back(pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height));
    }
    for (int x = 0; x < g.pooled_w; ++x) {
      cols.push_back(pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width));
    }
    group_starts.assign(g.pooled_w, 0);
    for (int x = 0; x + kOutputGroup <= g.pooled_w; ++x) {
      bool alike = true;
      for (int i = 1; i < kOutputGroup; ++i) {
        alike = alike && cols[x + i].begin == cols[x].begin + i * g.stride_w &&
                cols[x + i].end - cols[x + i].begin == cols[x].end - cols[x].begin;
      }
      group_starts[x] = alike;
    }
    if (backward) {
      covering_rows = covering(rows, g.height);
      covering_cols = covering(cols, g.width);
    }
  }

  static std::vector<CoveringOutputs> covering(const std::vector<PoolingWindow>& windows,
                                               int input) {
    std::vector<CoveringOutputs> result(input);
    const int outputs = static_cast<int>(windows.size());
    int begin = 0;
    int end = 0;
    for (int i = 0; i < input; ++i) {
      while (begin < outputs && windows[begin].end <= i) ++begin;
      while (end < outputs && windows[end].begin <= i) ++end;
      result[i] = {begin, std::max(begin, end)};
    }
    return result;
  }

  std::size_t window_work() const {
    return static_cast<std::size_t>(kChannelBlock) * g.pooled_h * g.pooled_w * g.kernel_h *
               g.kernel_w +
           block_size;
  }
};

// ---------------------------------------------------------------------------
// Per-block kernels: all arrays channel-blocked.

XTRAIN_VECTOR_CLONES
void max_forward_block(const BlockedPoolingPlan& plan, const float* input, float* output,
                       int* mask) {
  const int width = plan.g.width;
  const int stride = plan.g.stride_w;
  for (const PoolingWindow& rows : plan.rows) {
    for (int x = 0; x < plan.g.pooled_w;) {
      const PoolingWindow& cols = plan.cols[x];
      if (plan.group_starts[x]) {
        // kOutputGroup windows side by side: independent chains in flight.
        Lanes best[kOutputGroup];
        LaneInts index[kOutputGroup];
        for (int i = 0; i < kOutputGroup; ++i) {
          best[i] = Lanes{} - FLT_MAX;
          index[i] = LaneInts{} - 1;
        }
        for (int h = rows.begin; h < rows.end; ++h) {
          for (int w = cols.begin; w < cols.end; ++w) {
            for (int i = 0; i < kOutputGroup; ++i) {
              const int at = h * width + w + i * stride;
              Lanes value;
              std::memcpy(&value, input + static_cast<std::size_t>(at) * kChannelBlock,
                          sizeof value);
              const LaneInts greater = value > best[i];
              best[i] = greater ? value : best[i];
              index[i] = greater ? LaneInts{} + at : index[i];
            }
          }
        }
        std::memcpy(output, best, sizeof best);
        std::memcpy(mask, index, sizeof index);
        output += kOutputGroup * kChannelBlock;
        mask += kOutputGroup * kChannelBlock;
        x += kOutputGroup;
        continue;
      }
      Lanes best = Lanes{} - FLT_MAX;
      LaneInts index = LaneInts{} - 1;
      for (int h = rows.begin; h < rows.end; ++h) {
        for (int w = cols.begin; w < cols.end; ++w) {
          const int at = h * width + w;
          Lanes value;
          std::memcpy(&value, input + static_cast<std::size_t>(at) * kChannelBlock, sizeof value);
          const LaneInts greater = value > best;  // all ones where value wins
          best = greater ? value : best;
          index = greater ? LaneInts{} + at : index;
        }
      }
      std::memcpy(output, &best, sizeof best);
      std::memcpy(mask, &index, sizeof index);
      output += kChannelBlock;
      mask += kChannelBlock;
      ++x;
    }
  }
}

XTRAIN_VECTOR_CLONES
void average_forward_block(const BlockedPoolingPlan& plan, const float* input, float* output) {
  const int width = plan.g.width;
  for (const PoolingWindow& rows : plan.rows) {
    for (const PoolingWindow& cols : plan.cols) {
      Lanes sum = Lanes{};
      for (int h = rows.begin; h < rows.end; ++h) {
        for (int w = cols.begin; w < cols.end; ++w) {
          Lanes value;
          std::memcpy(&value, input + static_cast<std::size_t>(h * width + w) * kChannelBlock,
                      sizeof value);
          sum += value;
        }
      }
      // The divisor is an int product, as in Caffe, converted once.
      sum = sum / static_cast<float>(rows.divisor_extent * cols.divisor_extent);
      std::memcpy(output, &sum, sizeof sum);
      output += kChannelBlock;
    }
  }
}

XTRAIN_VECTOR_CLONES
void max_backward_block(const BlockedPoolingPlan& plan, const float* output_diff, const int* mask,
                        float* input_diff) {
  const int width = plan.g.width;
  const int pooled_w = plan.g.pooled_w;
  for (int h = 0; h < plan.g.height; ++h) {
    const CoveringOutputs ys = plan.covering_rows[h];
    for (int w = 0; w < width; ++w) {
      const CoveringOutputs xs = plan.covering_cols[w];
      const int at = h * width + w;
      Lanes sum = Lanes{};
      for (int y = ys.begin; y < ys.end; ++y) {
        for (int x = xs.begin; x < xs.end; ++x) {
          const std::size_t o = static_cast<std::size_t>(y * pooled_w + x) * kChannelBlock;
          Lanes diff;
          LaneInts argmax;
          std::memcpy(&diff, output_diff + o, sizeof diff);
          std::memcpy(&argmax, mask + o, sizeof argmax);
          sum = argmax == at ? sum + diff : sum;
        }
      }
      std::memcpy(input_diff + static_cast<std::size_t>(at) * kChannelBlock, &sum, sizeof sum);
    }
  }
}

// `share` holds pooled_block_size floats of scratch.
XTRAIN_VECTOR_CLONES
void average_backward_block(const BlockedPoolingPlan& plan, const float* output_diff,
                            float* input_diff, float* share) {
  float* share_out = share;
  for (const PoolingWindow& rows : plan.rows) {
    for (const PoolingWindow& cols : plan.cols) {
      Lanes diff;
      std::memcpy(&diff, output_diff, sizeof diff);
      diff = diff / static_cast<float>(rows.divisor_extent * cols.divisor_extent);
      std::memcpy(share_out, &diff, sizeof diff);
      output_diff += kChannelBlock;
      share_out += kChannelBlock;
    }
  }
  const int width = plan.g.width;
  const int pooled_w = plan.g.pooled_w;
  for (int h = 0; h < plan.g.height; ++h) {
    const CoveringOutputs ys = plan.covering_rows[h];
    for (int w = 0; w < width; ++w) {
      const CoveringOutputs xs = plan.covering_cols[w];
      Lanes sum = Lanes{};
      for (int y = ys.begin; y < ys.end; ++y) {
        for (int x = xs.begin; x < xs.end; ++x) {
          Lanes value;
          std::memcpy(&value, share + static_cast<std::size_t>(y * pooled_w + x) * kChannelBlock,
                      sizeof value);
          sum += value;
        }
      }
      std::memcpy(input_diff + static_cast<std::size_t>(h * width + w) * kChannelBlock, &sum,
                  sizeof sum);
    }
  }
}

// ---------------------------------------------------------------------------
// Plain <-> blocked for one block's outputs: a transposition between the
// block's `positions` x 16 values and its 16 channel planes of `positions`
// values each (one after another). 16 x 16 tiles go through registers:
// four rounds of two-source shuffles, round k swapping bit k of the row and
// column indices; the rest element by element. 32-bit values of any type.

// Round k's shuffles, for rows r (bit k clear) and r + 2^k:
//   low[c]  = c has bit k ? row r + 2^k [c - 2^k] : row r [c]
//   high[c] = c has bit k ? row r + 2^k [c] : row r [c + 2^k]
// (indices 16.. of a shuffle mask pick from the second row).
const LaneInts kTransposeLow[4] = {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
                                   {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
                                   {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
                                   {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}};
const LaneInts kTransposeHigh[4] = {{1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31},
                                    {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
                                    {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
                                    {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}};

// dst (c, r) = src (r, c) for a rows x columns matrix of 32-bit values,
// rows or columns being kChannelBlock.
XTRAIN_VECTOR_CLONES
void transpose_32bit(const void* source, std::size_t rows, std::size_t columns, void* target) {
  const char* src = static_cast<const char*>(source);
  char* dst = static_cast<char*>(target);
  constexpr std::size_t kValue = 4;
  const std::size_t row_tiles = rows / kChannelBlock * kChannelBlock;
  const std::size_t column_tiles = columns / kChannelBlock * kChannelBlock;
  for (std::size_t r0 = 0; r0 < row_tiles; r0 += kChannelBlock) {
    for (std::size_t c0 = 0; c0 < column_tiles; c0 += kChannelBlock) {
      LaneInts tile[kChannelBlock];
#pragma GCC unroll 16
      for (int r = 0; r < kChannelBlock; ++r) {
        std::memcpy(&tile[r], src + ((r0 + r) * columns + c0) * kValue, sizeof tile[r]);
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        const int d = 1 << k;
#pragma GCC unroll 16
        for (int r = 0; r < kChannelBlock; ++r) {
          if (r & d) continue;
          const LaneInts low = __builtin_shuffle(tile[r], tile[r + d], kTransposeLow[k]);
          const LaneInts high = __builtin_shuffle(tile[r], tile[r + d], kTransposeHigh[k]);
          tile[r] = low;
          tile[r + d] = high;
        }
      }
#pragma GCC unroll 16
      for (int c = 0; c < kChannelBlock; ++c) {
        std::memcpy(dst + ((c0 + c) * rows + r0) * kValue, &tile[c], sizeof tile[c]);
      }
    }
  }
  // The edges: rows past the last tile, then columns past it.
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = r < row_tiles ? column_tiles : 0; c < columns; ++c) {
      std::memcpy(dst + (c * rows + r) * kValue, src + (r * columns + c) * kValue, kValue);
    }
  }
}

template <typename T>
void block_to_planes(const T* blocked, std::size_t positions, T* planes) {
  static_assert(sizeof(T) == 4, "transpose_32bit moves 32-bit values");
  transpose_32bit(blocked, positions, kChannelBlock, planes);
}

template <typename T>
void planes_to_block(const T* planes, std::size_t positions, T* blocked) {
  static_assert(sizeof(T) == 4, "transpose_32bit moves 32-bit values");
  transpose_32bit(planes, kChannelBlock, positions, blocked);
}

// A per-thread buffer of at least `size` elements.
template <typename T>
T* scratch(std::vector<T>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

}  // namespace

// Block b's outputs start at b * pooled_block_size in either layout: the
// block's 16 channel planes are the plain planes 16 b ... 16 b + 15.

void max_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                              float* output, int* mask, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, false);
  const std::size_t positions = plan.pooled_block_size / kChannelBlock;
  parallel_for(plan.blocks, plan.window_work(), [&](std::int64_t b) {
    const float* in = input + b * plan.block_size;
    float* out = output + b * plan.pooled_block_size;
    int* argmax = mask + b * plan.pooled_block_size;
    if (output_blocked) {
      max_forward_block(plan, in, out, argmax);
      return;
    }
    thread_local std::vector<float> best_buffer;
    thread_local std::vector<int> argmax_buffer;
    float* best = scratch(best_buffer, plan.pooled_block_size);
    int* index = scratch(argmax_buffer, plan.pooled_block_size);
    max_forward_block(plan, in, best, index);
    block_to_planes(best, positions, out);
    block_to_planes(index, positions, argmax);
  });
}

void max_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                               const int* mask, float* input_diff, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, true);
  const std::size_t positions = plan.pooled_block_size / kChannelBlock;
  parallel_for(plan.blocks, plan.window_work(), [&](std::int64_t b) {
    const float* top_diff = output_diff + b * plan.pooled_block_size;
    const int* argmax = mask + b * plan.pooled_block_size;
    float* diff = input_diff + b * plan.block_size;
    if (output_blocked) {
      max_backward_block(plan, top_diff, argmax, diff);
      return;
    }
    thread_local std::vector<float> diff_buffer;
    thread_local std::vector<int> argmax_buffer;
    float* blocked_diff = scratch(diff_buffer, plan.pooled_block_size);
    int* blocked_argmax = scratch(argmax_buffer, plan.pooled_block_size);
    planes_to_block(top_diff, positions, blocked_diff);
    planes_to_block(argmax, positions, blocked_argmax);
    max_backward_block(plan, blocked_diff, blocked_argmax, diff);
  });
}

void average_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                                  float* output, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, false);
  const std::size_t positions = plan.pooled_block_size / kChannelBlock;
  parallel_for(plan.blocks, plan.window_work(), [&](std::int64_t b) {
    const float* in = input + b * plan.block_size;
    float* out = output + b * plan.pooled_block_size;
    if (output_blocked) {
      average_forward_block(plan, in, out);
      return;
    }
    thread_local std::vector<float> average_buffer;
    float* average = scratch(average_buffer, plan.pooled_block_size);
    average_forward_block(plan, in, average);
    block_to_planes(average, positions, out);
  });
}

void average_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                                   float* input_diff, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, true);
  const std::size_t positions = plan.pooled_block_size / kChannelBlock;
  parallel_for(plan.blocks, plan.window_work(), [&](std::int64_t b) {
    const float* top_diff = output_diff + b * plan.pooled_block_size;
    float* diff = input_diff + b * plan.block_size;
    thread_local std::vector<float> share_buffer;
    thread_local std::vector<float> diff_buffer;
    float* share = scratch(share_buffer, plan.pooled_block_size);
    if (!output_blocked) {
      float* blocked_diff = scratch(diff_buffer, plan.pooled_block_size);
      planes_to_block(top_diff, positions, blocked_diff);
      top_diff = blocked_diff;
    }
    average_backward_block(plan, top_diff, diff, share);
  });
}

}  // namespace xtrain

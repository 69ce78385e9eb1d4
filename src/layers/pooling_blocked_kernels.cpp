// Pooling on channel-blocked activations, blocks (one image, B channels) in
// parallel. Within a block every operation is a B-lane vector operation,
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
// The per-block loops are templates on the block width B (8 or 16, see
// core/channel_blocked_layout.hpp), GCC vector types of B lanes mapping onto
// one zmm (16) or ymm (8) register, two ymm or two to four xmm. Each is
// compiled three times, in functions with GCC's target attribute for
// AVX-512, AVX2 and the x86-64 baseline (libxtrain is built for the
// baseline), and cpu_isa() picks one at run time, so XTRAIN_MAX_CPU_ISA caps
// them. Plain output (or output_diff) goes through a per-thread blocked
// buffer and a B-plane transposition.
#include "layers/pooling_blocked_kernels.hpp"

#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "core/parallel_loop.hpp"
#include "core/vector_shuffle.hpp"
#include "layers/isa_copies.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// One float and one int lane per channel of a block.
template <int B>
struct Vectors {
  static_assert(B == 8 || B == 16, "channel blocks are 8 or 16 wide");
  typedef float Lanes __attribute__((vector_size(B * sizeof(float))));
  typedef int LaneInts __attribute__((vector_size(B * sizeof(int))));
};

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
  int lanes;  // channels per block
  std::int64_t blocks;
  std::size_t block_size;         // lanes * height * width
  std::size_t pooled_block_size;  // lanes * pooled_h * pooled_w
  std::vector<PoolingWindow> rows;
  std::vector<PoolingWindow> cols;
  std::vector<CoveringOutputs> covering_rows;
  std::vector<CoveringOutputs> covering_cols;
  // group_starts[x]: output columns x ... x + kOutputGroup - 1 have windows
  // of one width, `stride` apart, so they can be computed together.
  std::vector<char> group_starts;

  BlockedPoolingPlan(const PoolingGeometry& geometry, int channels, bool backward)
      : g(geometry),
        lanes(channel_block()),
        blocks(geometry.planes / lanes),
        block_size(static_cast<std::size_t>(lanes) * geometry.height * geometry.width),
        pooled_block_size(static_cast<std::size_t>(lanes) * geometry.pooled_h * geometry.pooled_w) {
    XTRAIN_ASSERT(channels_can_be_blocked(channels) && g.planes % channels == 0,
                  "channel-blocked pooling needs a multiple of ", lanes,
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
    return static_cast<std::size_t>(lanes) * g.pooled_h * g.pooled_w * g.kernel_h * g.kernel_w +
           block_size;
  }
};

// ---------------------------------------------------------------------------
// Per-block kernels: all arrays channel-blocked.

template <int B>
XTRAIN_KERNEL_BODY void max_forward_block(const BlockedPoolingPlan& plan, const float* input,
                                          float* output, int* mask) {
  using Lanes = typename Vectors<B>::Lanes;
  using LaneInts = typename Vectors<B>::LaneInts;
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
              std::memcpy(&value, input + static_cast<std::size_t>(at) * B, sizeof value);
              const LaneInts greater = value > best[i];
              best[i] = greater ? value : best[i];
              index[i] = greater ? LaneInts{} + at : index[i];
            }
          }
        }
        std::memcpy(output, best, sizeof best);
        std::memcpy(mask, index, sizeof index);
        output += kOutputGroup * B;
        mask += kOutputGroup * B;
        x += kOutputGroup;
        continue;
      }
      Lanes best = Lanes{} - FLT_MAX;
      LaneInts index = LaneInts{} - 1;
      for (int h = rows.begin; h < rows.end; ++h) {
        for (int w = cols.begin; w < cols.end; ++w) {
          const int at = h * width + w;
          Lanes value;
          std::memcpy(&value, input + static_cast<std::size_t>(at) * B, sizeof value);
          const LaneInts greater = value > best;  // all ones where value wins
          best = greater ? value : best;
          index = greater ? LaneInts{} + at : index;
        }
      }
      std::memcpy(output, &best, sizeof best);
      std::memcpy(mask, &index, sizeof index);
      output += B;
      mask += B;
      ++x;
    }
  }
}

template <int B>
XTRAIN_KERNEL_BODY void average_forward_block(const BlockedPoolingPlan& plan, const float* input,
                                              float* output) {
  using Lanes = typename Vectors<B>::Lanes;
  const int width = plan.g.width;
  for (const PoolingWindow& rows : plan.rows) {
    for (const PoolingWindow& cols : plan.cols) {
      Lanes sum = Lanes{};
      for (int h = rows.begin; h < rows.end; ++h) {
        for (int w = cols.begin; w < cols.end; ++w) {
          Lanes value;
          std::memcpy(&value, input + static_cast<std::size_t>(h * width + w) * B, sizeof value);
          sum += value;
        }
      }
      // The divisor is an int product, as in Caffe, converted once.
      sum = sum / static_cast<float>(rows.divisor_extent * cols.divisor_extent);
      std::memcpy(output, &sum, sizeof sum);
      output += B;
    }
  }
}

template <int B>
XTRAIN_KERNEL_BODY void max_backward_block(const BlockedPoolingPlan& plan, const float* output_diff,
                                           const int* mask, float* input_diff) {
  using Lanes = typename Vectors<B>::Lanes;
  using LaneInts = typename Vectors<B>::LaneInts;
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
          const std::size_t o = static_cast<std::size_t>(y * pooled_w + x) * B;
          Lanes diff;
          LaneInts argmax;
          std::memcpy(&diff, output_diff + o, sizeof diff);
          std::memcpy(&argmax, mask + o, sizeof argmax);
          sum = argmax == at ? sum + diff : sum;
        }
      }
      std::memcpy(input_diff + static_cast<std::size_t>(at) * B, &sum, sizeof sum);
    }
  }
}

// `share` holds pooled_block_size floats of scratch.
template <int B>
XTRAIN_KERNEL_BODY void average_backward_block(const BlockedPoolingPlan& plan,
                                               const float* output_diff, float* input_diff,
                                               float* share) {
  using Lanes = typename Vectors<B>::Lanes;
  float* share_out = share;
  for (const PoolingWindow& rows : plan.rows) {
    for (const PoolingWindow& cols : plan.cols) {
      Lanes diff;
      std::memcpy(&diff, output_diff, sizeof diff);
      diff = diff / static_cast<float>(rows.divisor_extent * cols.divisor_extent);
      std::memcpy(share_out, &diff, sizeof diff);
      output_diff += B;
      share_out += B;
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
          std::memcpy(&value, share + static_cast<std::size_t>(y * pooled_w + x) * B, sizeof value);
          sum += value;
        }
      }
      std::memcpy(input_diff + static_cast<std::size_t>(h * width + w) * B, &sum, sizeof sum);
    }
  }
}

// ---------------------------------------------------------------------------
// Plain <-> blocked for one block's outputs: a transposition between the
// block's `positions` x B values and its B channel planes of `positions`
// values each (one after another). B x B tiles go through registers: log2(B)
// rounds of two-source shuffles, round k swapping bit k of the row and
// column indices; the rest element by element. 32-bit values of any type.

// Round k's shuffles, d = 2^k, for rows r (bit k clear) and r + d:
//   low[c]  = c has bit k ? row r + d [c - d] : row r [c]
//   high[c] = c has bit k ? row r + d [c] : row r [c + d]
// (indices B.. of a shuffle mask pick from the second row).
template <int B>
struct TransposeMasks {
  static constexpr int kRounds = B == 16 ? 4 : 3;
  int low[kRounds][B] = {};
  int high[kRounds][B] = {};
  constexpr TransposeMasks() {
    for (int k = 0; k < kRounds; ++k) {
      const int d = 1 << k;
      for (int c = 0; c < B; ++c) {
        low[k][c] = (c & d) ? B + c - d : c;
        high[k][c] = (c & d) ? B + c : c + d;
      }
    }
  }
};

template <int B>
constexpr TransposeMasks<B> kTransposeMasks{};

// dst (c, r) = src (r, c) for a rows x columns matrix of 32-bit values,
// rows or columns being B.
template <int B>
XTRAIN_KERNEL_BODY void transpose_32bit(const void* source, std::size_t rows, std::size_t columns,
                                        void* target) {
  using LaneInts = typename Vectors<B>::LaneInts;
  constexpr int kRounds = TransposeMasks<B>::kRounds;
  const char* src = static_cast<const char*>(source);
  char* dst = static_cast<char*>(target);
  constexpr std::size_t kValue = 4;
  const std::size_t row_tiles = rows / B * B;
  const std::size_t column_tiles = columns / B * B;
  LaneInts low_masks[kRounds];
  LaneInts high_masks[kRounds];
  std::memcpy(low_masks, kTransposeMasks<B>.low, sizeof low_masks);
  std::memcpy(high_masks, kTransposeMasks<B>.high, sizeof high_masks);
  for (std::size_t r0 = 0; r0 < row_tiles; r0 += B) {
    for (std::size_t c0 = 0; c0 < column_tiles; c0 += B) {
      LaneInts tile[B];
#pragma GCC unroll 16
      for (int r = 0; r < B; ++r) {
        std::memcpy(&tile[r], src + ((r0 + r) * columns + c0) * kValue, sizeof tile[r]);
      }
#pragma GCC unroll 4
      for (int k = 0; k < kRounds; ++k) {
        const int d = 1 << k;
#pragma GCC unroll 16
        for (int r = 0; r < B; ++r) {
          if (r & d) continue;
          const LaneInts low = XTRAIN_SHUFFLE2(tile[r], tile[r + d], low_masks[k]);
          const LaneInts high = XTRAIN_SHUFFLE2(tile[r], tile[r + d], high_masks[k]);
          tile[r] = low;
          tile[r + d] = high;
        }
      }
#pragma GCC unroll 16
      for (int c = 0; c < B; ++c) {
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

// ---------------------------------------------------------------------------
// One copy of every kernel per instruction set and block width.

template <int B>
struct BlockKernels {
  CpuIsa isa;
  void (*max_forward)(const BlockedPoolingPlan&, const float*, float*, int*);
  void (*average_forward)(const BlockedPoolingPlan&, const float*, float*);
  void (*max_backward)(const BlockedPoolingPlan&, const float*, const int*, float*);
  void (*average_backward)(const BlockedPoolingPlan&, const float*, float*, float*);
  void (*transpose)(const void*, std::size_t, std::size_t, void*);
};

// The copies for one instruction set: functions named <kernel>_<suffix>
// compiled with `attributes`, and kernels_<suffix><B>() listing them.
#define XTRAIN_POOLING_KERNEL_COPIES(suffix, isa_value, attributes)                                \
  template <int B>                                                                                 \
  attributes void max_forward_##suffix(const BlockedPoolingPlan& plan, const float* input,         \
                                       float* output, int* mask) {                                 \
    max_forward_block<B>(plan, input, output, mask);                                               \
  }                                                                                                \
  template <int B>                                                                                 \
  attributes void average_forward_##suffix(const BlockedPoolingPlan& plan, const float* input,     \
                                           float* output) {                                        \
    average_forward_block<B>(plan, input, output);                                                 \
  }                                                                                                \
  template <int B>                                                                                 \
  attributes void max_backward_##suffix(const BlockedPoolingPlan& plan, const float* output_diff,  \
                                        const int* mask, float* input_diff) {                      \
    max_backward_block<B>(plan, output_diff, mask, input_diff);                                    \
  }                                                                                                \
  template <int B>                                                                                 \
  attributes void average_backward_##suffix(                                                       \
      const BlockedPoolingPlan& plan, const float* output_diff, float* input_diff, float* share) { \
    average_backward_block<B>(plan, output_diff, input_diff, share);                               \
  }                                                                                                \
  template <int B>                                                                                 \
  attributes void transpose_##suffix(const void* source, std::size_t rows, std::size_t columns,    \
                                     void* target) {                                               \
    transpose_32bit<B>(source, rows, columns, target);                                             \
  }                                                                                                \
  template <int B>                                                                                 \
  const BlockKernels<B>& kernels_##suffix() {                                                      \
    static const BlockKernels<B> kernels{isa_value,                                                \
                                         max_forward_##suffix<B>,                                  \
                                         average_forward_##suffix<B>,                              \
                                         max_backward_##suffix<B>,                                 \
                                         average_backward_##suffix<B>,                             \
                                         transpose_##suffix<B>};                                   \
    return kernels;                                                                                \
  }

XTRAIN_POOLING_KERNEL_COPIES(baseline, CpuIsa::kBaseline, )
#ifdef XTRAIN_HAVE_ISA_COPIES
XTRAIN_POOLING_KERNEL_COPIES(avx2, CpuIsa::kAvx2, __attribute__((target("avx2,fma"))))
XTRAIN_POOLING_KERNEL_COPIES(avx512, CpuIsa::kAvx512, __attribute__((target("avx512f"))))
#endif

// The copy for the level cpu_isa() allows.
template <int B>
const BlockKernels<B>& kernels() {
#ifdef XTRAIN_HAVE_ISA_COPIES
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      return kernels_avx512<B>();
    case CpuIsa::kAvx2:
      return kernels_avx2<B>();
    case CpuIsa::kBaseline:
      break;
  }
#endif
  return kernels_baseline<B>();
}

template <int B, typename T>
void block_to_planes(const BlockKernels<B>& k, const T* blocked, std::size_t positions, T* planes) {
  static_assert(sizeof(T) == 4, "transpose_32bit moves 32-bit values");
  k.transpose(blocked, positions, B, planes);
}

template <int B, typename T>
void planes_to_block(const BlockKernels<B>& k, const T* planes, std::size_t positions, T* blocked) {
  static_assert(sizeof(T) == 4, "transpose_32bit moves 32-bit values");
  k.transpose(planes, B, positions, blocked);
}

// A per-thread buffer of at least `size` elements.
template <typename T>
T* scratch(std::vector<T>& buffer, std::size_t size) {
  if (buffer.size() < size) buffer.resize(size);
  return buffer.data();
}

// Block b's outputs start at b * pooled_block_size in either layout: the
// block's B channel planes are the plain planes B b ... B b + B - 1.

// Runs body(kernels, positions, b) for every block b of the plan, in
// parallel; `positions` is the number of output positions of a block.
template <int B, typename Body>
void for_each_block(const BlockedPoolingPlan& plan, Body body) {
  const BlockKernels<B>& k = kernels<B>();
  const std::size_t positions = plan.pooled_block_size / B;
  parallel_for(plan.blocks, plan.window_work(), [&](std::int64_t b) { body(k, positions, b); });
}

template <int B>
void max_forward(const BlockedPoolingPlan& plan, const float* input, float* output, int* mask,
                 bool output_blocked) {
  for_each_block<B>(plan, [&](const BlockKernels<B>& k, std::size_t positions, std::int64_t b) {
    const float* in = input + b * plan.block_size;
    float* out = output + b * plan.pooled_block_size;
    int* argmax = mask + b * plan.pooled_block_size;
    if (output_blocked) {
      k.max_forward(plan, in, out, argmax);
      return;
    }
    thread_local std::vector<float> best_buffer;
    thread_local std::vector<int> argmax_buffer;
    float* best = scratch(best_buffer, plan.pooled_block_size);
    int* index = scratch(argmax_buffer, plan.pooled_block_size);
    k.max_forward(plan, in, best, index);
    block_to_planes(k, best, positions, out);
    block_to_planes(k, index, positions, argmax);
  });
}

template <int B>
void max_backward(const BlockedPoolingPlan& plan, const float* output_diff, const int* mask,
                  float* input_diff, bool output_blocked) {
  for_each_block<B>(plan, [&](const BlockKernels<B>& k, std::size_t positions, std::int64_t b) {
    const float* top_diff = output_diff + b * plan.pooled_block_size;
    const int* argmax = mask + b * plan.pooled_block_size;
    float* diff = input_diff + b * plan.block_size;
    if (output_blocked) {
      k.max_backward(plan, top_diff, argmax, diff);
      return;
    }
    thread_local std::vector<float> diff_buffer;
    thread_local std::vector<int> argmax_buffer;
    float* blocked_diff = scratch(diff_buffer, plan.pooled_block_size);
    int* blocked_argmax = scratch(argmax_buffer, plan.pooled_block_size);
    planes_to_block(k, top_diff, positions, blocked_diff);
    planes_to_block(k, argmax, positions, blocked_argmax);
    k.max_backward(plan, blocked_diff, blocked_argmax, diff);
  });
}

template <int B>
void average_forward(const BlockedPoolingPlan& plan, const float* input, float* output,
                     bool output_blocked) {
  for_each_block<B>(plan, [&](const BlockKernels<B>& k, std::size_t positions, std::int64_t b) {
    const float* in = input + b * plan.block_size;
    float* out = output + b * plan.pooled_block_size;
    if (output_blocked) {
      k.average_forward(plan, in, out);
      return;
    }
    thread_local std::vector<float> average_buffer;
    float* average = scratch(average_buffer, plan.pooled_block_size);
    k.average_forward(plan, in, average);
    block_to_planes(k, average, positions, out);
  });
}

template <int B>
void average_backward(const BlockedPoolingPlan& plan, const float* output_diff, float* input_diff,
                      bool output_blocked) {
  for_each_block<B>(plan, [&](const BlockKernels<B>& k, std::size_t positions, std::int64_t b) {
    const float* top_diff = output_diff + b * plan.pooled_block_size;
    float* diff = input_diff + b * plan.block_size;
    thread_local std::vector<float> share_buffer;
    thread_local std::vector<float> diff_buffer;
    float* share = scratch(share_buffer, plan.pooled_block_size);
    if (!output_blocked) {
      float* blocked_diff = scratch(diff_buffer, plan.pooled_block_size);
      planes_to_block(k, top_diff, positions, blocked_diff);
      top_diff = blocked_diff;
    }
    k.average_backward(plan, top_diff, diff, share);
  });
}

// Runs body(lanes) with the plan's block width as a compile-time constant.
template <typename Body>
void with_lanes(const BlockedPoolingPlan& plan, Body body) {
  if (plan.lanes == 16) {
    body(std::integral_constant<int, 16>{});
  } else {
    body(std::integral_constant<int, 8>{});
  }
}

}  // namespace

void max_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                              float* output, int* mask, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, false);
  with_lanes(plan, [&](auto lanes) {
    max_forward<decltype(lanes)::value>(plan, input, output, mask, output_blocked);
  });
}

void max_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                               const int* mask, float* input_diff, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, true);
  with_lanes(plan, [&](auto lanes) {
    max_backward<decltype(lanes)::value>(plan, output_diff, mask, input_diff, output_blocked);
  });
}

void average_pool_forward_blocked(const PoolingGeometry& g, int channels, const float* input,
                                  float* output, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, false);
  with_lanes(plan, [&](auto lanes) {
    average_forward<decltype(lanes)::value>(plan, input, output, output_blocked);
  });
}

void average_pool_backward_blocked(const PoolingGeometry& g, int channels, const float* output_diff,
                                   float* input_diff, bool output_blocked) {
  const BlockedPoolingPlan plan(g, channels, true);
  with_lanes(plan, [&](auto lanes) {
    average_backward<decltype(lanes)::value>(plan, output_diff, input_diff, output_blocked);
  });
}

CpuIsa pooling_blocked_kernels_isa() {
  return channel_block() == 16 ? kernels<16>().isa : kernels<8>().isa;
}

}  // namespace xtrain

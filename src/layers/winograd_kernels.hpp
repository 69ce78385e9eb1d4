// The vector kernels of WinogradConvolution: a stride-1 correlation with a
// 5x5 filter bank by Winograd's minimal filtering F(2x2, 5x5), which makes
// each 2x2 block of outputs from a 6x6 tile of the source with 36
// multiplications per (output, input) channel pair instead of 100.
//
// In one dimension (points 0, 1, -1, 2, -2 and infinity), for a filter g of
// 5 taps and a source tile d of 6 values, the 2 outputs
//   y[i] = sum over k of g[k] * d[i + k]
// are y = A^T [(G g) . (B^T d)], with
//   B^T = [ 4  0 -5  0  1  0 ]     G = [ 1/4    0     0     0    0   ]
//         [ 0  4  4 -1 -1  0 ]         [ 1/6   1/6   1/6   1/6  1/6  ]
//         [ 0 -4  4  1 -1  0 ]         [ 1/6  -1/6   1/6  -1/6  1/6  ]
//         [ 0 -2 -1  2  1  0 ]         [ 1/24  1/12  1/6   1/3  2/3  ]
//         [ 0  2 -1 -2  1  0 ]         [ 1/24 -1/12  1/6  -1/3  2/3  ]
//         [ 0  4  0 -5  0  1 ]         [ 0     0     0     0    1    ]
//   A^T = [ 1  1  1  1  1  0 ]
//         [ 0  1 -1  2 -2  1 ]
// and in two, Y = A^T [(G g G^T) . (B^T d B)] A: the 36 products of a tile
// are, for each of its 36 positions xi, a matrix product over the input
// channels, M[xi](o, tile) = sum over c of U[xi](o, c) * V[xi](c, tile).
//
// The vectors run over images: a group of 8 images is interleaved first
// (x[c][y][x][image]), so that every load is contiguous whatever the image
// size, and taken apart again at the end. Both steps are 8x8 transposes,
// along the rows of plain arrays or across the channels of a pixel of
// channel-blocked ones, so the engine reads and writes either layout
// without a reorder. Compiled once per instruction set
// (AVX-512 with 32 registers, AVX2, the baseline), as the direct kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/parallel_loop.hpp"

namespace xtrain {

// Images per group: the lanes of a vector.
constexpr int kWinogradLanes = 8;
// The 6x6 tile positions.
constexpr int kWinogradPositions = 36;
// Output channels whose transformed weights are packed together.
constexpr int kWinogradOutputBlock = 8;

struct WinogradPlan {
  int channels = 0;  // of the source
  int height = 0;
  int width = 0;
  int pad_h = 0;
  int pad_w = 0;
  int outputs = 0;  // output channels
  int out_h = 0;
  int out_w = 0;
  // The layouts of the sources and the results: 0 for plain (channels,
  // height, width) arrays, else the channels per block of the channel-blocked
  // layout (8 or 16, core/channel_blocked_layout.hpp), whose channel count
  // must then be a multiple of it. Set per call, by the engine.
  int source_block = 0;
  int result_block = 0;

  int tiles_y() const { return (out_h + 1) / 2; }
  int tiles_x() const { return (out_w + 1) / 2; }
  // The interleaved source, padded to whole tiles.
  int padded_h() const { return 2 * tiles_y() + 4; }
  int padded_w() const { return 2 * tiles_x() + 4; }
  int output_blocks() const {
    return (outputs + kWinogradOutputBlock - 1) / kWinogradOutputBlock;
  }
  // Floats of the transformed weights: 36 * output_blocks() * 8 * channels.
  std::size_t transformed_weight_count() const;
};

// A plan for a 5x5 correlation of a (channels, height, width) source padded
// by pad_h, pad_w, into `outputs` channels; out_h, out_w from those.
WinogradPlan make_winograd_plan(int channels, int height, int width, int pad_h, int pad_w,
                                int outputs);

// U[xi] = G g G^T for each (output o, channel c) filter g(i, j) = weight(o,
// c, i, j), stored at [((xi * output_blocks + o / 8) * channels + c) * 8 +
// o % 8], zero for the outputs past the last.
template <typename Weight>
void transform_winograd_weights(const WinogradPlan& plan, Weight weight, float* transformed);

// Per thread: the buffers of one group.
struct WinogradScratch {
  std::vector<float> source;       // interleaved, padded
  std::vector<float> transformed;  // V of one tile row
  std::vector<float> products;     // M of one tile row
  std::vector<float> output;       // interleaved
};

struct WinogradKernels {
  // Up to 8 images: sources[l] (or null: the lane is unused) -> outputs[l] =
  // bias (or 0 where null) + the correlation, each an (outputs, out_h,
  // out_w) array in the plan's result layout; overwrites the output rows of tile rows [first_row,
  // end_row) (tile row t makes output rows 2t and 2t + 1), so that threads
  // can share a group.
  void (*convolve_group)(const WinogradPlan& plan, const float* const* sources,
                         const float* transformed_weights, const float* bias,
                         float* const* outputs, int first_row, int end_row,
                         WinogradScratch& scratch);
};

// The kernels at the instruction set cpu_isa() allows.
const WinogradKernels& winograd_kernels();

// ----------------------------------------------------------------------------

namespace winograd_detail {
// G (6 x 5), the filter transform above, applied to 5 taps g: its non-zero
// products, each constant as G holds it, summed left to right.
inline void filter_transform(const float (&g)[5], float (&out)[6]) {
  constexpr float k4 = 1.0f / 4, k6 = 1.0f / 6, k12 = 1.0f / 12, k24 = 1.0f / 24,
                  k3 = 1.0f / 3, k23 = 2.0f / 3;
  out[0] = g[0] * k4;
  out[1] = g[0] * k6 + g[1] * k6 + g[2] * k6 + g[3] * k6 + g[4] * k6;
  out[2] = g[0] * k6 + g[1] * -k6 + g[2] * k6 + g[3] * -k6 + g[4] * k6;
  out[3] = g[0] * k24 + g[1] * k12 + g[2] * k6 + g[3] * k3 + g[4] * k23;
  out[4] = g[0] * k24 + g[1] * -k12 + g[2] * k6 + g[3] * -k3 + g[4] * k23;
  out[5] = g[4];
}
}  // namespace winograd_detail

// The output blocks go to the threads: the weights change at every solver
// step, so both of a layer's transforms run once per iteration (a few
// hundred thousand multiply-adds for CIFAR10-quick's conv2).
template <typename Weight>
void transform_winograd_weights(const WinogradPlan& plan, Weight weight, float* transformed) {
  using winograd_detail::filter_transform;
  const int blocks = plan.output_blocks(), channels = plan.channels;
  // ~250 flops per filter: the two passes of G over its rows and columns.
  const std::size_t work_per_block =
      static_cast<std::size_t>(kWinogradOutputBlock) * channels * 250;
  parallel_for(blocks, work_per_block, [&](std::int64_t block) {
    for (int o = static_cast<int>(block) * kWinogradOutputBlock;
         o < (static_cast<int>(block) + 1) * kWinogradOutputBlock; ++o) {
      for (int c = 0; c < channels; ++c) {
        float u[6][6] = {};
        if (o < plan.outputs) {
          float g_gt[6][5];  // (g G^T)^T: g_gt[b][i]
          for (int i = 0; i < 5; ++i) {
            float row[5], out[6];
            for (int j = 0; j < 5; ++j) row[j] = weight(o, c, i, j);
            filter_transform(row, out);
            for (int b = 0; b < 6; ++b) g_gt[b][i] = out[b];
          }
          for (int b = 0; b < 6; ++b) {
            float out[6];
            filter_transform(g_gt[b], out);
            for (int a = 0; a < 6; ++a) u[a][b] = out[a];
          }
        }
        for (int xi = 0; xi < kWinogradPositions; ++xi) {
          const std::size_t at =
              ((static_cast<std::size_t>(xi) * blocks + o / kWinogradOutputBlock) * channels + c) *
                  kWinogradOutputBlock +
              o % kWinogradOutputBlock;
          transformed[at] = u[xi / 6][xi % 6];
        }
      }
    }
  });
}

}  // namespace xtrain

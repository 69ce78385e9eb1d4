// The vector kernels of DirectConvolution: a stride-1 correlation of padded
// source planes with a small filter bank, computed straight from the planes
// (no im2col columns), and the gradient of its weights.
//
//   correlate:        out[o, y, x] = bias[o] + sum over c, i, j of
//                                    w[o, c, i, j] * source[c, y + i, x + j]
//   weight gradient:  dw[o, c, i, j] += sum over y, x of
//                                    out_diff[o, y, x] * source[c, y + i, x + j]
//
// The output positions go a vector of `lanes` outputs of one row at a time
// (a "chunk"); a row whose width is not a multiple of the lanes ends with a
// chunk that overlaps the one before it, so no load reads past a row. The
// weight gradient zeroes the overlapping lanes so that each output counts once.
//
// Each kernel is compiled once per instruction set (AVX-512, AVX2, the x86-64
// baseline), with its tile sizes chosen for that set's registers, and picked
// by cpu_isa() (XTRAIN_MAX_CPU_ISA caps it).
#pragma once

#include <cstddef>
#include <vector>

namespace xtrain {

// One output chunk: the row, the first column, and how many of its first
// lanes an earlier chunk of the row already covers.
struct OutputChunk {
  int y = 0;
  int x = 0;
  int covered = 0;
};

// Output channels whose weights are packed together (see pack_correlation_weights).
constexpr int kCorrelationOutputBlock = 4;

struct CorrelationPlan {
  int source_channels = 0;
  int source_height = 0;  // padded
  int source_width = 0;   // padded
  int kernel_h = 0;
  int kernel_w = 0;
  int output_channels = 0;
  int lanes = 0;  // 4, 8 or 16
  std::vector<OutputChunk> chunks;

  int output_height() const { return source_height - kernel_h + 1; }
  int output_width() const { return source_width - kernel_w + 1; }
  int output_blocks() const {
    return (output_channels + kCorrelationOutputBlock - 1) / kCorrelationOutputBlock;
  }
  // Floats of the packed weights: output_blocks() * 4 * C * kh * kw.
  std::size_t packed_weight_count() const;
};

// The plan of a correlation whose outputs are at least `lanes` wide.
CorrelationPlan make_correlation_plan(int source_channels, int source_height, int source_width,
                                      int kernel_h, int kernel_w, int output_channels, int lanes);

// weight(o, c, i, j) -> packed[((block * C + c) * kh + i) * kw + j) * 4 + o % 4],
// block = o / 4, zero for the outputs past the last. `weight` reads the
// caller's layout (forward: w[o, c, i, j]; the adjoint: a flipped transpose).
template <typename Weight>
void pack_correlation_weights(const CorrelationPlan& plan, Weight weight, float* packed) {
  const int b = kCorrelationOutputBlock;
  for (int block = 0; block < plan.output_blocks(); ++block) {
    for (int c = 0; c < plan.source_channels; ++c) {
      for (int i = 0; i < plan.kernel_h; ++i) {
        for (int j = 0; j < plan.kernel_w; ++j) {
          for (int lane = 0; lane < b; ++lane) {
            const int o = block * b + lane;
            *packed++ = o < plan.output_channels ? weight(o, c, i, j) : 0.0f;
          }
        }
      }
    }
  }
}

struct CorrelationKernels {
  // One image: output (output_channels planes) = bias (or 0 where null) +
  // the correlation of source (source_channels padded planes) with the
  // packed weights. Overwrites output.
  void (*correlate)(const CorrelationPlan& plan, const float* source, const float* packed_weights,
                    const float* bias, float* output);
  // One image: partial[(o, c, i, j) * lanes + lane] += the lane's share of
  // dw[o, c, i, j] (the caller adds the lanes up at the end), and, when
  // bias_partial is not null, bias_partial[o] += sum of out_diff[o].
  void (*weight_gradient)(const CorrelationPlan& plan, const float* source,
                          const float* output_diff, float* partial, float* bias_partial);
};

// The kernels for `lanes`-wide vectors at the instruction set cpu_isa()
// allows, or null when that set has no such width.
const CorrelationKernels* correlation_kernels(int lanes);

// The vector widths the kernels have at cpu_isa(), widest first.
std::vector<int> correlation_lane_widths();

}  // namespace xtrain

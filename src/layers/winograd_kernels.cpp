// One group of 8 images, tile row by tile row (so that a row's V and M stay
// in the core's cache):
//   1. interleave: x[c][y][x][lane] = source[lane][c][y - pad_h][x - pad_w]
//      (zero outside), by 8x8 transposes;
//   2. per tile row: V[xi][c][tile] = B^T d B of each 6x6 tile d (vectors of
//      8 images); M[xi] = U[xi] V[xi] over the channels (4 outputs x XB
//      tiles of accumulators); the outputs' 2x2 blocks A^T M A (+ bias) into
//      the interleaved output;
//   3. take the interleaved output apart into the 8 images, by transposes.
// Steps 1 and 3 read and write plain or channel-blocked arrays (the plan's
// source_block and result_block).
// This file is compiled with -ffp-contract=fast, as the direct kernels.
#include "layers/winograd_kernels.hpp"

#include <algorithm>
#include <cstring>

#include "core/cpu_isa.hpp"
#include "layers/isa_copies.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

std::size_t WinogradPlan::transformed_weight_count() const {
  return static_cast<std::size_t>(kWinogradPositions) * output_blocks() * kWinogradOutputBlock *
         channels;
}

WinogradPlan make_winograd_plan(int channels, int height, int width, int pad_h, int pad_w,
                                int outputs) {
  WinogradPlan plan;
  plan.channels = channels;
  plan.height = height;
  plan.width = width;
  plan.pad_h = pad_h;
  plan.pad_w = pad_w;
  plan.outputs = outputs;
  plan.out_h = height + 2 * pad_h - 4;
  plan.out_w = width + 2 * pad_w - 4;
  XTRAIN_ASSERT(plan.out_h > 0 && plan.out_w > 0 && pad_h <= 4 && pad_w <= 4,
                "a Winograd plan needs an output and at most 4 pixels of padding");
  return plan;
}

namespace {

constexpr int L = kWinogradLanes;
typedef float Floats __attribute__((vector_size(L * sizeof(float))));

// Loads and stores through a vector type of float alignment: GCC moves
// whole vectors so (a memcpy between a tile's stack arrays and the buffers
// went by 16-byte halves, and each half-written vector then stalled its next
// load). Vectors go through references, never by value, so that no function
// compiled for the baseline passes a 32-byte vector.
typedef float UnalignedFloats
    __attribute__((vector_size(L * sizeof(float)), aligned(alignof(float)), may_alias));
XTRAIN_KERNEL_BODY void load(Floats& v, const float* p) {
  v = *reinterpret_cast<const UnalignedFloats*>(p);
}
XTRAIN_KERNEL_BODY void store(float* p, const Floats& v) {
  *reinterpret_cast<UnalignedFloats*>(p) = v;
}
// Every lane `value` (Floats{} + value would add 0 first, as -0 must stay -0).
XTRAIN_KERNEL_BODY void splat(Floats& v, float value) {
  v = Floats{value, value, value, value, value, value, value, value};
}

// Floats from one tile position's V (or M) to the next: a tile row's worth
// and a cache line more, so that the 36 stores (or loads) of one tile do not
// all fall into one set of the L1 cache (when a multiple of 4 KiB apart they
// evicted each other: the transforms ran 20x slower).
constexpr std::size_t kPositionSkew = 64 / sizeof(float);
XTRAIN_KERNEL_BODY std::size_t source_position_step(const WinogradPlan& p) {
  return static_cast<std::size_t>(p.channels) * p.tiles_x() * L + kPositionSkew;
}
XTRAIN_KERNEL_BODY std::size_t product_position_step(const WinogradPlan& p) {
  return static_cast<std::size_t>(p.output_blocks()) * kWinogradOutputBlock * p.tiles_x() * L +
         kPositionSkew;
}

// rows[r] (8 floats, r < 8) -> columns: out[k][r] = rows[r][k].
XTRAIN_KERNEL_BODY void transpose8x8(Floats (&r)[8]) {
  Floats a[8], b[8];
  XTRAIN_UNROLL
  for (int p = 0; p < 8; p += 2) {
    a[p] = __builtin_shufflevector(r[p], r[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    a[p + 1] = __builtin_shufflevector(r[p], r[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  XTRAIN_UNROLL
  for (int p = 0; p < 8; p += 4) {
    b[p] = __builtin_shufflevector(a[p], a[p + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    b[p + 1] = __builtin_shufflevector(a[p], a[p + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    b[p + 2] = __builtin_shufflevector(a[p + 1], a[p + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    b[p + 3] = __builtin_shufflevector(a[p + 1], a[p + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  XTRAIN_UNROLL
  for (int p = 0; p < 4; ++p) {
    r[p] = __builtin_shufflevector(b[p], b[p + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[p + 4] = __builtin_shufflevector(b[p], b[p + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// 1. The group's sources, interleaved and padded into `x` (zeroed first).
// Plain sources: 8 columns of a row of each image make one transpose.
XTRAIN_KERNEL_BODY void interleave_plain(const WinogradPlan& p, const float* const* sources,
                                         float* x) {
  const int ph = p.padded_h(), pw = p.padded_w();
  static const float kZeros[L] = {};
  for (int c = 0; c < p.channels; ++c) {
    for (int y = 0; y < p.height; ++y) {
      const std::size_t row = (static_cast<std::size_t>(c) * p.height + y) * p.width;
      float* to = x + ((static_cast<std::size_t>(c) * ph + y + p.pad_h) * pw + p.pad_w) * L;
      int col = 0;
      for (; col + L <= p.width; col += L) {
        Floats r[8];
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) load(r[l], sources[l] ? sources[l] + row + col : kZeros);
        transpose8x8(r);
        XTRAIN_UNROLL
        for (int k = 0; k < L; ++k) store(to + (col + k) * L, r[k]);
      }
      for (; col < p.width; ++col) {
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) to[col * L + l] = sources[l] ? sources[l][row + col] : 0.0f;
      }
    }
  }
}

// Channel-blocked sources: 8 channels of a pixel of each image make one.
XTRAIN_KERNEL_BODY void interleave_blocked(const WinogradPlan& p, const float* const* sources,
                                           float* x) {
  const int ph = p.padded_h(), pw = p.padded_w(), block = p.source_block;
  const std::size_t spatial = static_cast<std::size_t>(p.height) * p.width;
  const std::size_t plane = static_cast<std::size_t>(ph) * pw * L;
  static const float kZeros[L] = {};
  for (int c0 = 0; c0 < p.channels; c0 += L) {
    const std::size_t block_start = static_cast<std::size_t>(c0 / block) * spatial * block;
    float* channels = x + static_cast<std::size_t>(c0) * plane;
    for (int y = 0; y < p.height; ++y) {
      for (int col = 0; col < p.width; ++col) {
        const std::size_t at = block_start + (static_cast<std::size_t>(y) * p.width + col) * block +
                               c0 % block;
        Floats r[8];
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) load(r[l], sources[l] ? sources[l] + at : kZeros);
        transpose8x8(r);
        float* to = channels + ((static_cast<std::size_t>(y) + p.pad_h) * pw + col + p.pad_w) * L;
        XTRAIN_UNROLL
        for (int k = 0; k < L; ++k) store(to + k * plane, r[k]);
      }
    }
  }
}

XTRAIN_KERNEL_BODY void interleave(const WinogradPlan& p, const float* const* sources, float* x) {
  std::memset(x, 0, sizeof(float) * p.channels * p.padded_h() * p.padded_w() * L);
  if (p.source_block == 0) {
    interleave_plain(p, sources, x);
  } else {
    interleave_blocked(p, sources, x);
  }
}

// B^T applied to 6 vectors d[0..5] (a column or a row of a tile).
XTRAIN_KERNEL_BODY void source_transform(const Floats (&d)[6], Floats (&out)[6]) {
  const Floats t1 = 4.0f * d[2] - d[4], t2 = 4.0f * d[1] - d[3];
  const Floats t3 = d[4] - d[2], t4 = 2.0f * (d[3] - d[1]);
  out[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  out[1] = t1 + t2;
  out[2] = t1 - t2;
  out[3] = t3 + t4;
  out[4] = t3 - t4;
  out[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// A^T applied to 6 vectors m[0..5].
XTRAIN_KERNEL_BODY void output_transform(const Floats (&m)[6], Floats (&out)[2]) {
  const Floats s = m[1] + m[2], t = m[3] + m[4];
  out[0] = m[0] + s + t;
  out[1] = (m[1] - m[2]) + 2.0f * (m[3] - m[4]) + m[5];
}

// 2a. V[xi][c][tile] for the tiles of tile row ty.
XTRAIN_KERNEL_BODY void transform_sources(const WinogradPlan& p, const float* x, int ty,
                                          float* v) {
  const int pw = p.padded_w(), tiles = p.tiles_x();
  const std::size_t position_step = source_position_step(p);
  for (int c = 0; c < p.channels; ++c) {
    const float* plane = x + (static_cast<std::size_t>(c) * p.padded_h() + 2 * ty) * pw * L;
    for (int tx = 0; tx < tiles; ++tx) {
      Floats rows[6][6];  // B^T d: rows[a][j]
      XTRAIN_UNROLL
      for (int j = 0; j < 6; ++j) {
        Floats column[6], transformed[6];
        XTRAIN_UNROLL
        for (int i = 0; i < 6; ++i) load(column[i], plane + (i * pw + 2 * tx + j) * L);
        source_transform(column, transformed);
        XTRAIN_UNROLL
        for (int a = 0; a < 6; ++a) rows[a][j] = transformed[a];
      }
      float* to = v + (static_cast<std::size_t>(c) * tiles + tx) * L;
      XTRAIN_UNROLL
      for (int a = 0; a < 6; ++a) {
        Floats out[6];
        source_transform(rows[a], out);
        XTRAIN_UNROLL
        for (int b = 0; b < 6; ++b) store(to + (a * 6 + b) * position_step, out[b]);
      }
    }
  }
}

// 2b. M[xi][o][tile] = sum over c of U[xi][o][c] * V[xi][c][tile] for OB
// outputs of output block `block` (from its output o0) and XB tiles from
// `tile`: per channel, XB loads and OB broadcasts feed OB * XB
// multiply-adds. AVX-512's 32 registers hold 8 x 3 accumulators; AVX2's 16
// hold 4 x 3 (the block in two halves), which needs 7 loads per 12
// multiply-adds where 8 x 1 needed 9 per 8; the baseline takes 8 x 1.
template <int OB, int XB>
XTRAIN_KERNEL_BODY void multiply_tile(const WinogradPlan& p, const float* u, const float* v,
                                      int tiles, int tile, float* m) {
  constexpr int B = kWinogradOutputBlock;
  Floats acc[OB][XB];
  XTRAIN_UNROLL
  for (int o = 0; o < OB; ++o) {
    XTRAIN_UNROLL
    for (int k = 0; k < XB; ++k) acc[o][k] = Floats{};
  }
  const std::size_t row = static_cast<std::size_t>(tiles) * L;
  for (int c = 0; c < p.channels; ++c, u += B) {
    const float* from = v + c * row + tile * L;
    Floats value[XB];
    XTRAIN_UNROLL
    for (int k = 0; k < XB; ++k) load(value[k], from + k * L);
    XTRAIN_UNROLL
    for (int o = 0; o < OB; ++o) {
      Floats weight;
      splat(weight, u[o]);
      XTRAIN_UNROLL
      for (int k = 0; k < XB; ++k) acc[o][k] += weight * value[k];
    }
  }
  XTRAIN_UNROLL
  for (int o = 0; o < OB; ++o) {
    XTRAIN_UNROLL
    for (int k = 0; k < XB; ++k) store(m + o * row + (tile + k) * L, acc[o][k]);
  }
}

template <int OB, int XB>
XTRAIN_KERNEL_BODY void multiply(const WinogradPlan& p, const float* transformed_weights,
                                 const float* v, float* m) {
  constexpr int B = kWinogradOutputBlock;
  static_assert(B % OB == 0, "the output block splits into whole parts");
  const int tiles = p.tiles_x(), blocks = p.output_blocks();
  const std::size_t v_step = source_position_step(p), m_step = product_position_step(p);
  const std::size_t row = static_cast<std::size_t>(tiles) * L;
  for (int xi = 0; xi < kWinogradPositions; ++xi) {
    const float* source = v + xi * v_step;
    for (int block = 0; block < blocks; ++block) {
      for (int o0 = 0; o0 < B; o0 += OB) {
        const float* u =
            transformed_weights + (static_cast<std::size_t>(xi) * blocks + block) * p.channels * B +
            o0;
        float* to = m + xi * m_step + (static_cast<std::size_t>(block) * B + o0) * row;
        int tile = 0;
        for (; tile + XB <= tiles; tile += XB) {
          multiply_tile<OB, XB>(p, u, source, tiles, tile, to);
        }
        for (; tile < tiles; ++tile) multiply_tile<OB, 1>(p, u, source, tiles, tile, to);
      }
    }
  }
}

// 2c. The 2x2 output blocks of tile row ty, from M, into the interleaved
// output y[o][2 ty + a][2 tx + b][lane] (rows 2 * tiles_y, columns 2 * tiles_x).
XTRAIN_KERNEL_BODY void transform_products(const WinogradPlan& p, const float* m, const float* bias,
                                           int ty, float* y) {
  const int tiles = p.tiles_x(), width = 2 * tiles;
  const std::size_t m_step = product_position_step(p);
  for (int o = 0; o < p.outputs; ++o) {
    Floats b;
    splat(b, bias != nullptr ? bias[o] : 0.0f);
    float* plane = y + (static_cast<std::size_t>(o) * 2 * p.tiles_y() + 2 * ty) * width * L;
    for (int tx = 0; tx < tiles; ++tx) {
      const float* from = m + (static_cast<std::size_t>(o) * tiles + tx) * L;
      Floats columns[2][6];  // A^T applied down each column: columns[a][j]
      XTRAIN_UNROLL
      for (int j = 0; j < 6; ++j) {
        Floats column[6], out[2];
        XTRAIN_UNROLL
        for (int i = 0; i < 6; ++i) load(column[i], from + (i * 6 + j) * m_step);
        output_transform(column, out);
        columns[0][j] = out[0];
        columns[1][j] = out[1];
      }
      XTRAIN_UNROLL
      for (int a = 0; a < 2; ++a) {
        Floats out[2];
        output_transform(columns[a], out);
        store(plane + (a * width + 2 * tx) * L, out[0] + b);
        store(plane + (a * width + 2 * tx + 1) * L, out[1] + b);
      }
    }
  }
}

// 3. Output rows [first, end) of the interleaved output into the images'
// arrays. Plain ones: a transpose per 8 columns of a row.
XTRAIN_KERNEL_BODY void take_apart_plain(const WinogradPlan& p, const float* y, int first, int end,
                                         float* const* outputs) {
  const int width = 2 * p.tiles_x(), height = 2 * p.tiles_y();
  for (int o = 0; o < p.outputs; ++o) {
    for (int row = first; row < end; ++row) {
      const float* from = y + ((static_cast<std::size_t>(o) * height + row) * width) * L;
      const std::size_t at = (static_cast<std::size_t>(o) * p.out_h + row) * p.out_w;
      int col = 0;
      for (; col + L <= p.out_w; col += L) {
        Floats r[8];
        XTRAIN_UNROLL
        for (int k = 0; k < L; ++k) load(r[k], from + (col + k) * L);
        transpose8x8(r);
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) {
          if (outputs[l] != nullptr) store(outputs[l] + at + col, r[l]);
        }
      }
      for (; col < p.out_w; ++col) {
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) {
          if (outputs[l] != nullptr) outputs[l][at + col] = from[col * L + l];
        }
      }
    }
  }
}

// Channel-blocked ones: a transpose per 8 channels of a pixel.
XTRAIN_KERNEL_BODY void take_apart_blocked(const WinogradPlan& p, const float* y, int first,
                                           int end, float* const* outputs) {
  const int width = 2 * p.tiles_x(), height = 2 * p.tiles_y(), block = p.result_block;
  const std::size_t plane = static_cast<std::size_t>(height) * width * L;
  const std::size_t spatial = static_cast<std::size_t>(p.out_h) * p.out_w;
  for (int o0 = 0; o0 < p.outputs; o0 += L) {
    const std::size_t block_start = static_cast<std::size_t>(o0 / block) * spatial * block;
    const float* channels = y + static_cast<std::size_t>(o0) * plane;
    for (int row = first; row < end; ++row) {
      for (int col = 0; col < p.out_w; ++col) {
        const float* from = channels + (static_cast<std::size_t>(row) * width + col) * L;
        Floats r[8];
        XTRAIN_UNROLL
        for (int k = 0; k < L; ++k) load(r[k], from + k * plane);
        transpose8x8(r);
        const std::size_t at =
            block_start + (static_cast<std::size_t>(row) * p.out_w + col) * block + o0 % block;
        XTRAIN_UNROLL
        for (int l = 0; l < L; ++l) {
          if (outputs[l] != nullptr) store(outputs[l] + at, r[l]);
        }
      }
    }
  }
}

XTRAIN_KERNEL_BODY void take_apart(const WinogradPlan& p, const float* y, int first, int end,
                                   float* const* outputs) {
  if (p.result_block == 0) {
    take_apart_plain(p, y, first, end, outputs);
  } else {
    take_apart_blocked(p, y, first, end, outputs);
  }
}

template <int OB, int XB>
XTRAIN_KERNEL_BODY void convolve_group_body(const WinogradPlan& p, const float* const* sources,
                                            const float* transformed_weights, const float* bias,
                                            float* const* outputs, int first_row, int end_row,
                                            WinogradScratch& s) {
  const std::size_t tiles = p.tiles_x();
  s.source.resize(static_cast<std::size_t>(p.channels) * p.padded_h() * p.padded_w() * L);
  s.transformed.resize(kWinogradPositions * source_position_step(p));
  s.products.resize(kWinogradPositions * product_position_step(p));
  s.output.resize(static_cast<std::size_t>(p.outputs) * 2 * p.tiles_y() * 2 * tiles * L);
  interleave(p, sources, s.source.data());
  for (int ty = first_row; ty < end_row; ++ty) {
    transform_sources(p, s.source.data(), ty, s.transformed.data());
    multiply<OB, XB>(p, transformed_weights, s.transformed.data(), s.products.data());
    transform_products(p, s.products.data(), bias, ty, s.output.data());
  }
  take_apart(p, s.output.data(), 2 * first_row, std::min(2 * end_row, p.out_h), outputs);
}

#define XTRAIN_WINOGRAD_COPY(suffix, OB, XB, attributes)                                           \
  attributes void convolve_group_##suffix(const WinogradPlan& p, const float* const* sources,      \
                                          const float* transformed_weights, const float* bias,     \
                                          float* const* outputs, int first_row, int end_row,       \
                                          WinogradScratch& scratch) {                              \
    convolve_group_body<OB, XB>(p, sources, transformed_weights, bias, outputs, first_row,         \
                                end_row, scratch);                                                 \
  }                                                                                                \
  const WinogradKernels kernels_##suffix = {convolve_group_##suffix};

XTRAIN_WINOGRAD_COPY(baseline, 8, 1, )
#ifdef XTRAIN_HAVE_ISA_COPIES
XTRAIN_WINOGRAD_COPY(avx2, 4, 3, __attribute__((target("avx2,fma"))))
XTRAIN_WINOGRAD_COPY(avx512, 8, 3, __attribute__((target("avx512f,avx512vl,fma"))))
#endif

}  // namespace

const WinogradKernels& winograd_kernels() {
#ifdef XTRAIN_HAVE_ISA_COPIES
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      return kernels_avx512;
    case CpuIsa::kAvx2:
      return kernels_avx2;
    case CpuIsa::kBaseline:
      break;
  }
#endif
  return kernels_baseline;
}

}  // namespace xtrain

// Tiles, per instruction set (V lanes per vector):
//   correlate: 4 output channels x XB chunks of accumulators; per filter
//     tap, 4 broadcast weights and 4 * XB unaligned loads of the source
//     feed 4 * XB fused multiply-adds (XB = 6 with AVX-512's 32 registers,
//     else 3);
//   weight gradient: OB output channels x TB neighbouring taps of one
//     filter row (a "run" of at most MaxRun taps); per chunk, OB loads of
//     the output diff and TB of the source feed OB * TB multiply-adds,
//     summed lane-wise into the caller's partial (AVX-512: OB = 4, runs of
//     up to 5; AVX2: 3 and 3, as 4 x 5 accumulators do not fit its 16
//     registers and 2 x 5 ran at 30-59 GFLOP/s against 3 x 3's 75 on
//     CIFAR10-quick's conv1; the baseline: 2 and 5). Each tap's sum over
//     the chunks runs in the same order whatever the tile, so the tile
//     sizes do not change the result.
// This file is compiled with -ffp-contract=fast (see CMakeLists.txt) so
// that `acc += a * b` becomes one fused multiply-add: the sums differ from
// the reference's in rounding only, as oneDNN's do.
#include "layers/direct_convolution_kernels.hpp"

#include <algorithm>
#include <cstring>

#include "core/cpu_isa.hpp"
#include "layers/isa_copies.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

std::size_t CorrelationPlan::packed_weight_count() const {
  return static_cast<std::size_t>(output_blocks()) * kCorrelationOutputBlock * source_channels *
         kernel_h * kernel_w;
}

CorrelationPlan make_correlation_plan(int source_channels, int source_height, int source_width,
                                      int kernel_h, int kernel_w, int output_channels, int lanes) {
  CorrelationPlan plan;
  plan.source_channels = source_channels;
  plan.source_height = source_height;
  plan.source_width = source_width;
  plan.kernel_h = kernel_h;
  plan.kernel_w = kernel_w;
  plan.output_channels = output_channels;
  plan.lanes = lanes;
  const int width = plan.output_width();
  XTRAIN_ASSERT(plan.output_height() > 0 && width >= lanes,
                "a correlation plan needs output rows at least one vector wide");
  for (int y = 0; y < plan.output_height(); ++y) {
    int x = 0;
    for (; x + lanes <= width; x += lanes) plan.chunks.push_back({y, x, 0});
    if (x < width) plan.chunks.push_back({y, width - lanes, x - (width - lanes)});
  }
  return plan;
}

namespace {

template <int V>
struct Vectors {
  typedef float Floats __attribute__((vector_size(V * sizeof(float))));
  typedef int Ints __attribute__((vector_size(V * sizeof(int))));
};

// Vectors go through references, never by value, so that no function
// compiled for the baseline passes a 32- or 64-byte vector.
template <typename Vector>
XTRAIN_KERNEL_BODY void load(Vector& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
template <typename Vector>
XTRAIN_KERNEL_BODY void store(float* p, const Vector& v) {
  std::memcpy(p, &v, sizeof v);
}

// 4 output channels x XB chunks, through every tap of the filters.
template <int V, int XB>
XTRAIN_KERNEL_BODY void correlate_tile(const CorrelationPlan& p, const float* source,
                                       const float* packed_block, const float* bias_block,
                                       int valid_outputs, const OutputChunk* chunks,
                                       float* output_block) {
  typedef typename Vectors<V>::Floats Floats;
  constexpr int B = kCorrelationOutputBlock;
  const int width = p.source_width;
  const std::size_t plane = static_cast<std::size_t>(p.source_height) * width;
  Floats acc[B][XB];
  for (int o = 0; o < B; ++o) {
    const float bias = bias_block != nullptr && o < valid_outputs ? bias_block[o] : 0.0f;
    for (int k = 0; k < XB; ++k) acc[o][k] = Floats{} + bias;
  }
  const float* at[XB];
  for (int k = 0; k < XB; ++k) at[k] = source + chunks[k].y * width + chunks[k].x;
  const float* w = packed_block;
  for (int c = 0; c < p.source_channels; ++c) {
    for (int i = 0; i < p.kernel_h; ++i) {
      const std::size_t row = c * plane + static_cast<std::size_t>(i) * width;
      for (int j = 0; j < p.kernel_w; ++j, w += B) {
        // The source is loaded again for each output channel rather than
        // held in XB registers: the loads fold into the multiply-adds, and
        // AVX2's 16 registers then hold the 4 x 3 accumulators (holding the
        // sources too made GCC keep the accumulators on the stack: 17 instead
        // of 82 GFLOP/s on one Zen 4 core capped at AVX2).
        for (int o = 0; o < B; ++o) {
          const Floats weight = Floats{} + w[o];
          for (int k = 0; k < XB; ++k) {
            Floats source_chunk;
            load(source_chunk, at[k] + row + j);
            acc[o][k] += weight * source_chunk;
          }
        }
      }
    }
  }
  const int out_width = p.output_width();
  const std::size_t out_plane = static_cast<std::size_t>(p.output_height()) * out_width;
  for (int o = 0; o < valid_outputs; ++o) {
    for (int k = 0; k < XB; ++k) {
      store(output_block + o * out_plane + chunks[k].y * out_width + chunks[k].x, acc[o][k]);
    }
  }
}

template <int V, int XB>
XTRAIN_KERNEL_BODY void correlate_image(const CorrelationPlan& p, const float* source,
                                        const float* packed, const float* bias, float* output) {
  constexpr int B = kCorrelationOutputBlock;
  const std::size_t block_weights =
      static_cast<std::size_t>(B) * p.source_channels * p.kernel_h * p.kernel_w;
  const std::size_t out_plane = static_cast<std::size_t>(p.output_height()) * p.output_width();
  const OutputChunk* chunks = p.chunks.data();
  const int count = static_cast<int>(p.chunks.size());
  for (int block = 0; block < p.output_blocks(); ++block) {
    const int valid = std::min(B, p.output_channels - block * B);
    const float* w = packed + block * block_weights;
    const float* b = bias != nullptr ? bias + block * B : nullptr;
    float* out = output + block * B * out_plane;
    int k = 0;
    for (; k + XB <= count; k += XB) correlate_tile<V, XB>(p, source, w, b, valid, chunks + k, out);
    for (; k < count; ++k) correlate_tile<V, 1>(p, source, w, b, valid, chunks + k, out);
  }
}

// OB output channels x TB taps of one filter row, over every chunk of the
// image; `source_row` is the source plane shifted to the run's first tap,
// `partial` the lanes of dw at (first output, c, i, first tap), outputs
// `output_step` floats apart.
template <int V, int OB, int TB>
XTRAIN_KERNEL_BODY void gradient_run(const CorrelationPlan& p, const float* source_row,
                                     const float* const* diff, int valid_outputs, float* partial,
                                     std::size_t output_step) {
  typedef typename Vectors<V>::Floats Floats;
  typedef typename Vectors<V>::Ints Ints;
  Ints lane;
  for (int l = 0; l < V; ++l) lane[l] = l;
  Floats acc[OB][TB];
  for (int o = 0; o < OB; ++o) {
    for (int t = 0; t < TB; ++t) acc[o][t] = Floats{};
  }
  const int width = p.source_width;
  const int out_width = p.output_width();
  for (const OutputChunk& q : p.chunks) {
    // Unrolled, so that d stays in registers: a rolled loop kept d on the
    // stack, and each chunk then stalled on reloading what it had just stored.
    Floats d[OB];
#pragma GCC unroll 8
    for (int o = 0; o < OB; ++o) load(d[o], diff[o] + q.y * out_width + q.x);
    if (q.covered > 0) {
      const Ints fresh = lane >= q.covered;
#pragma GCC unroll 8
      for (int o = 0; o < OB; ++o) d[o] = fresh ? d[o] : Floats{};
    }
    const float* s = source_row + q.y * width + q.x;
    for (int t = 0; t < TB; ++t) {
      Floats value;
      load(value, s + t);
      for (int o = 0; o < OB; ++o) acc[o][t] += d[o] * value;
    }
  }
  // Constant bounds, so that GCC keeps acc in registers (a loop to
  // valid_outputs made it keep acc on the stack, storing it every chunk).
  for (int o = 0; o < OB; ++o) {
    if (o >= valid_outputs) break;
    for (int t = 0; t < TB; ++t) {
      float* at = partial + o * output_step + t * V;
      Floats sum;
      load(sum, at);
      sum += acc[o][t];
      store(at, sum);
    }
  }
}

template <int V>
XTRAIN_KERNEL_BODY float plane_sum(const float* values, std::size_t count) {
  typedef typename Vectors<V>::Floats Floats;
  Floats acc = Floats{};
  std::size_t k = 0;
  for (; k + V <= count; k += V) {
    Floats v;
    load(v, values + k);
    acc += v;
  }
  float sum = 0;
  for (int l = 0; l < V; ++l) sum += acc[l];
  for (; k < count; ++k) sum += values[k];
  return sum;
}

template <int V, int OB, int MaxRun>
XTRAIN_KERNEL_BODY void weight_gradient_image(const CorrelationPlan& p, const float* source,
                                              const float* output_diff, float* partial,
                                              float* bias_partial) {
  const std::size_t out_plane = static_cast<std::size_t>(p.output_height()) * p.output_width();
  const std::size_t plane = static_cast<std::size_t>(p.source_height) * p.source_width;
  const std::size_t taps = static_cast<std::size_t>(p.kernel_h) * p.kernel_w;
  const std::size_t output_step = p.source_channels * taps * V;
  // The outputs past the last of a group read zeros.
  thread_local std::vector<float> zeros;
  if (zeros.size() < out_plane) zeros.assign(out_plane, 0.0f);
  // The filter row in runs of at most MaxRun taps, as even as possible.
  const int runs = (p.kernel_w + MaxRun - 1) / MaxRun;
  for (int o0 = 0; o0 < p.output_channels; o0 += OB) {
    const int valid = std::min(OB, p.output_channels - o0);
    const float* diff[OB];
    for (int o = 0; o < OB; ++o) {
      diff[o] = o < valid ? output_diff + (o0 + o) * out_plane : zeros.data();
    }
    for (int c = 0; c < p.source_channels; ++c) {
      for (int i = 0; i < p.kernel_h; ++i) {
        int j0 = 0;
        for (int run = 0; run < runs; ++run) {
          const int length = p.kernel_w / runs + (run < p.kernel_w % runs ? 1 : 0);
          const float* row = source + c * plane + static_cast<std::size_t>(i) * p.source_width + j0;
          float* at = partial + ((o0 * p.source_channels + c) * taps + i * p.kernel_w + j0) * V;
          switch (length) {
            case 1:
              gradient_run<V, OB, 1>(p, row, diff, valid, at, output_step);
              break;
            case 2:
              gradient_run<V, OB, 2>(p, row, diff, valid, at, output_step);
              break;
            case 3:
              gradient_run<V, OB, 3>(p, row, diff, valid, at, output_step);
              break;
            case 4:
              gradient_run<V, OB, 4>(p, row, diff, valid, at, output_step);
              break;
            default:
              gradient_run<V, OB, 5>(p, row, diff, valid, at, output_step);
              break;
          }
          j0 += length;
        }
      }
    }
  }
  if (bias_partial != nullptr) {
    for (int o = 0; o < p.output_channels; ++o) {
      bias_partial[o] += plane_sum<V>(output_diff + o * out_plane, out_plane);
    }
  }
}

// The copy of both kernels for one instruction set and width.
#define XTRAIN_CORRELATION_COPY(suffix, V, XB, OB, RUN, attributes)                                     \
  attributes void correlate_##suffix(const CorrelationPlan& p, const float* source,               \
                                     const float* packed, const float* bias, float* output) {     \
    correlate_image<V, XB>(p, source, packed, bias, output);                                       \
  }                                                                                                \
  attributes void weight_gradient_##suffix(const CorrelationPlan& p, const float* source,         \
                                           const float* output_diff, float* partial,              \
                                           float* bias_partial) {                                 \
    weight_gradient_image<V, OB, RUN>(p, source, output_diff, partial, bias_partial);                   \
  }                                                                                                \
  const CorrelationKernels kernels_##suffix = {correlate_##suffix, weight_gradient_##suffix};

XTRAIN_CORRELATION_COPY(baseline_4, 4, 3, 2, 5, )
#ifdef XTRAIN_HAVE_ISA_COPIES
XTRAIN_CORRELATION_COPY(avx2_8, 8, 3, 3, 3, __attribute__((target("avx2,fma"))))
XTRAIN_CORRELATION_COPY(avx512_8, 8, 6, 4, 5, __attribute__((target("avx512f,avx512vl,fma"))))
XTRAIN_CORRELATION_COPY(avx512_16, 16, 6, 4, 5, __attribute__((target("avx512f,avx512vl,fma"))))
#endif

}  // namespace

const CorrelationKernels* correlation_kernels(int lanes) {
#ifdef XTRAIN_HAVE_ISA_COPIES
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      if (lanes == 16) return &kernels_avx512_16;
      return lanes == 8 ? &kernels_avx512_8 : nullptr;
    case CpuIsa::kAvx2:
      return lanes == 8 ? &kernels_avx2_8 : nullptr;
    case CpuIsa::kBaseline:
      break;
  }
#endif
  return lanes == 4 ? &kernels_baseline_4 : nullptr;
}

std::vector<int> correlation_lane_widths() {
#ifdef XTRAIN_HAVE_ISA_COPIES
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      return {16, 8};
    case CpuIsa::kAvx2:
      return {8};
    case CpuIsa::kBaseline:
      break;
  }
#endif
  return {4};
}

}  // namespace xtrain

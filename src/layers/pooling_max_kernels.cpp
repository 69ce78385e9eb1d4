// MAX pooling forward on plain planes (see pooling_kernels.hpp), planes in
// parallel.
//
// The outputs of a row whose windows lie inside the image go K at a time, K
// lanes of one vector register, through every offset (h, j) of the window:
//   best = value > best ? value : best, index likewise (a compare and two
//   selects), where value holds input[h, x * stride - pad + j] per lane;
// a row's last chunk may overlap the one before (it recomputes the same
// outputs); the few edge outputs, whose windows are clipped, go window by
// window as in the reference. Each output sees its window in row-major
// order, so `>` keeps Caffe's first maximum: the results are the
// reference's, bit for bit.
//
// K is the widest of 16, 8 and 4 lanes that the instruction set has and the
// row's inside part fills (LeNet's 12 outputs a row take 8). Each kernel is
// compiled once per instruction set (AVX-512, AVX2, the x86-64 baseline),
// picked at run time by cpu_isa(). With 4 SSE lanes only, CIFAR-10's 3x3
// stride-2 pooling over 32x32 took ~15 cycles an output.
#include <algorithm>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/cpu_isa.hpp"
#include "core/parallel_loop.hpp"
#include "core/vector_shuffle.hpp"
#include "layers/isa_copies.hpp"
#include "layers/pooling_kernels.hpp"

namespace xtrain {
namespace {

int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int ceil_div(int a, int b) { return -floor_div(-a, b); }

// Output columns [first, end) whose windows lie entirely inside the image.
struct InteriorColumns {
  int first;
  int end;
  explicit InteriorColumns(const PoolingGeometry& g)
      : first(ceil_div(g.pad_w, g.stride_w)),
        end(std::min(g.pooled_w, floor_div(g.width - g.kernel_w + g.pad_w, g.stride_w) + 1)) {}
  int width() const { return std::max(0, end - first); }
};

template <int K>
struct Lanes {
  typedef float Floats __attribute__((vector_size(K * sizeof(float))));
  typedef int Ints __attribute__((vector_size(K * sizeof(int))));
};

// For stride 2, the lanes of p[0 .. K-1] and p[K-1 .. 2K-2] that hold
// p[0], p[2], ..., p[2K-2]: lane l takes element 2l of the pair, or 2l + 1
// once it is in the second vector (which starts one element early).
template <int K>
struct EvenElements;
template <>
struct EvenElements<4> {
  static constexpr Lanes<4>::Ints mask{0, 2, 5, 7};
};
template <>
struct EvenElements<8> {
  static constexpr Lanes<8>::Ints mask{0, 2, 4, 6, 9, 11, 13, 15};
};
template <>
struct EvenElements<16> {
  static constexpr Lanes<16>::Ints mask{0, 2, 4, 6, 8, 10, 12, 14, 17, 19, 21, 23, 25, 27, 29, 31};
};

// Lanes p[0], p[stride], ... p[(K - 1) * stride], reading nothing past the
// last one.
template <int Stride, int K>
XTRAIN_KERNEL_BODY void load_strided(typename Lanes<K>::Floats& v, const float* p, int stride) {
  typedef typename Lanes<K>::Floats Floats;
  if constexpr (Stride == 1) {
    std::memcpy(&v, p, sizeof v);
  } else if constexpr (Stride == 2) {
    Floats low, high;
    std::memcpy(&low, p, sizeof low);
    std::memcpy(&high, p + K - 1, sizeof high);
    v = XTRAIN_SHUFFLE2(low, high, EvenElements<K>::mask);
  } else {
    for (int lane = 0; lane < K; ++lane) v[lane] = p[lane * stride];
  }
}

// Outputs [x0, x0 + K) of one row, window rows [row_begin, row_end) and
// columns x * stride - pad + [0, kernel_w), all inside the image.
template <int Stride, int K>
XTRAIN_KERNEL_BODY void max_chunk(const PoolingGeometry& g, const float* input, int row_begin,
                                  int row_end, int x0, float* output, int* index_out) {
  typedef typename Lanes<K>::Floats Floats;
  typedef typename Lanes<K>::Ints Ints;
  const int stride = Stride > 0 ? Stride : g.stride_w;
  Ints lane_offset;
  for (int lane = 0; lane < K; ++lane) lane_offset[lane] = lane * stride;
  Floats best = Floats{} - FLT_MAX;
  Ints index = Ints{} - 1;
  for (int h = row_begin; h < row_end; ++h) {
    const float* line = input + h * g.width;
    for (int j = 0; j < g.kernel_w; ++j) {
      const int column0 = x0 * stride - g.pad_w + j;
      Floats value;
      load_strided<Stride, K>(value, line + column0, stride);
      const Ints greater = value > best;  // all ones where value wins
      best = greater ? value : best;
      index = greater ? lane_offset + (h * g.width + column0) : index;
    }
  }
  std::memcpy(output, &best, sizeof best);
  std::memcpy(index_out, &index, sizeof index);
}

// One window, as the reference scans it.
XTRAIN_KERNEL_BODY void max_window(const PoolingGeometry& g, const float* input,
                                   const PoolingWindow& rows, int x, float* output,
                                   int* index_out) {
  const PoolingWindow cols = pooling_window(x, g.kernel_w, g.pad_w, g.stride_w, g.width);
  float best = -FLT_MAX;
  int best_index = -1;
  for (int h = rows.begin; h < rows.end; ++h) {
    for (int w = cols.begin; w < cols.end; ++w) {
      const int at = h * g.width + w;
      if (input[at] > best) {
        best = input[at];
        best_index = at;
      }
    }
  }
  *output = best;
  *index_out = best_index;
}

// One plane; K = 0 computes every output window by window.
template <int Stride, int K>
XTRAIN_KERNEL_BODY void max_pool_plane(const PoolingGeometry& g, const float* input, float* output,
                                       float* mask_top, int* mask, int* index_row) {
  const InteriorColumns interior(g);
  for (int y = 0; y < g.pooled_h; ++y) {
    const PoolingWindow rows = pooling_window(y, g.kernel_h, g.pad_h, g.stride_h, g.height);
    float* best = output + y * g.pooled_w;
    int* index = mask ? mask + y * g.pooled_w : index_row;
    int x = 0;
    if constexpr (K > 0) {
      for (; x < interior.first; ++x) max_window(g, input, rows, x, best + x, index + x);
      for (int x0 = interior.first; x0 < interior.end; x0 += K) {
        const int start = std::min(x0, interior.end - K);
        max_chunk<Stride, K>(g, input, rows.begin, rows.end, start, best + start, index + start);
      }
      x = interior.end;
    }
    for (; x < g.pooled_w; ++x) max_window(g, input, rows, x, best + x, index + x);
    if (mask_top) {
      float* mask_row = mask_top + y * g.pooled_w;
      for (int i = 0; i < g.pooled_w; ++i) mask_row[i] = static_cast<float>(index[i]);
    }
  }
}

typedef void (*MaxPlaneKernel)(const PoolingGeometry& g, const float* input, float* output,
                               float* mask_top, int* mask, int* index_row);

// The copies of one instruction set: max_plane_<suffix><Stride, K>.
#define XTRAIN_MAX_POOLING_COPIES(suffix, attributes)                                           \
  template <int Stride, int K>                                                                  \
  attributes void max_plane_##suffix(const PoolingGeometry& g, const float* input,              \
                                     float* output, float* mask_top, int* mask,                 \
                                     int* index_row) {                                          \
    max_pool_plane<Stride, K>(g, input, output, mask_top, mask, index_row);                     \
  }                                                                                             \
  template <int K>                                                                              \
  MaxPlaneKernel max_kernel_##suffix(int stride) {                                              \
    if (stride == 1) return max_plane_##suffix<1, K>;                                           \
    if (stride == 2) return max_plane_##suffix<2, K>;                                           \
    return max_plane_##suffix<0, K>;                                                            \
  }

XTRAIN_MAX_POOLING_COPIES(baseline, )
#ifdef XTRAIN_HAVE_ISA_COPIES
XTRAIN_MAX_POOLING_COPIES(avx2, __attribute__((target("avx2,fma"))))
XTRAIN_MAX_POOLING_COPIES(avx512, __attribute__((target("avx512f,avx512vl,avx512bw"))))
#endif

// The widest chunk the instruction set has and `width` outputs fill.
int chunk_lanes(int width, int widest) {
  for (int lanes : {16, 8, 4}) {
    if (lanes <= widest && width >= lanes) return lanes;
  }
  return 0;
}

MaxPlaneKernel max_plane_kernel(const PoolingGeometry& g) {
  const int width = InteriorColumns(g).width();
#ifdef XTRAIN_HAVE_ISA_COPIES
  switch (cpu_isa()) {
    case CpuIsa::kAvx512:
      switch (chunk_lanes(width, 16)) {
        case 16:
          return max_kernel_avx512<16>(g.stride_w);
        case 8:
          return max_kernel_avx512<8>(g.stride_w);
        case 4:
          return max_kernel_avx512<4>(g.stride_w);
        default:
          return max_kernel_avx512<0>(g.stride_w);
      }
    case CpuIsa::kAvx2:
      switch (chunk_lanes(width, 8)) {
        case 8:
          return max_kernel_avx2<8>(g.stride_w);
        case 4:
          return max_kernel_avx2<4>(g.stride_w);
        default:
          return max_kernel_avx2<0>(g.stride_w);
      }
    case CpuIsa::kBaseline:
      break;
  }
#endif
  return chunk_lanes(width, 4) == 4 ? max_kernel_baseline<4>(g.stride_w)
                                    : max_kernel_baseline<0>(g.stride_w);
}

}  // namespace

void max_pool_forward(const PoolingGeometry& g, const float* input, float* output, float* mask_top,
                      int* mask) {
  const std::size_t plane = static_cast<std::size_t>(g.height) * g.width;
  const std::size_t pooled_plane = static_cast<std::size_t>(g.pooled_h) * g.pooled_w;
  const std::size_t work = pooled_plane * g.kernel_h * g.kernel_w + plane;
  const MaxPlaneKernel kernel = max_plane_kernel(g);
  parallel_for(g.planes, work, [&](std::int64_t p) {
    thread_local std::vector<int> index_row;
    if (mask_top && index_row.size() < static_cast<std::size_t>(g.pooled_w)) {
      index_row.resize(g.pooled_w);
    }
    kernel(g, input + p * plane, output + p * pooled_plane,
           mask_top ? mask_top + p * pooled_plane : nullptr,
           mask ? mask + p * pooled_plane : nullptr, index_row.data());
  });
}

}  // namespace xtrain

// The sums of channel_statistics.hpp over one channel block of a
// channel-blocked activation (core/channel_blocked_layout.hpp): `spatial`
// vectors of B floats (B = 8 or 16 channels per block), lane l of every
// vector being one value of channel (block * B + l). Each lane is one
// channel plane strided by B, and
// gets exactly the plain plane sum's additions in the plain order: four
// running sums by spatial index mod 4, the tail into the first, the total
// (s0 + s1) + (s2 + s3). So a layer computing in the blocked layout builds
// the same per-plane sums, bit for bit, as its plain path.
//
// The kernels go position by position over all B lanes (each vector read
// whole, once, as it streams in), the 4 x B running sums in an array that
// stays in L1: sweeping a block once per group of lanes, with the sums in
// registers, measured no faster (the first sweep waits for memory, the
// others compute, and the two do not overlap). With SSE2 two lanes' running
// sums are one register: the same additions as the scalar code, in double.
// Every function is a template on B; callers pass their block's width.
#pragma once

#include <cstddef>

#include "core/channel_blocked_layout.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xtrain::channel_statistics::blocked {

namespace detail {

constexpr int kRunningSums = 4;

#if defined(__SSE2__)
// Lanes 0, 1 and lanes 2, 3 of four floats, in double.
inline __m128d low_pair(__m128 v) { return _mm_cvtps_pd(v); }
inline __m128d high_pair(__m128 v) { return _mm_cvtps_pd(_mm_movehl_ps(v, v)); }

// Two floats (lanes l, l + 1 at p), in double.
inline __m128d load_pair(const float* p) {
  return _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

#endif

// term(offset, k) for the positions [first, last) in the plain order
// (`first` a multiple of four): `offset` is the float offset of the
// position's vector, k the running sum it goes into (s % 4, and 0 for the
// tail after the last whole four).
template <int B, typename Term>
inline void for_each_position(std::size_t first, std::size_t last, Term term) {
  std::size_t s = first;
  for (; s + kRunningSums <= last; s += kRunningSums) {
    for (int k = 0; k < kRunningSums; ++k) term((s + k) * B, k);
  }
  for (; s < last; ++s) term(s * B, 0);
}

// The scalar form: the same additions, lane by lane.
template <int B, typename Term>
inline void accumulate_lanes(std::size_t spatial, double sums[kRunningSums][B], Term term) {
  for (int k = 0; k < kRunningSums; ++k) {
    for (int l = 0; l < B; ++l) sums[k][l] = 0;
  }
  for_each_position<B>(0, spatial, [&](std::size_t offset, int k) {
    for (int l = 0; l < B; ++l) sums[k][l] += term(offset + l, l);
  });
}

template <int B>
inline void store_lane_totals(const double sums[kRunningSums][B], double* out) {
  for (int l = 0; l < B; ++l) {
    out[l] = (sums[0][l] + sums[1][l]) + (sums[2][l] + sums[3][l]);
  }
}

}  // namespace detail

// The scalar forms of sum and squared_deviation_sum below (what they compute
// without SSE2; the tests hold them to the plain sums too).
namespace scalar {

template <int B>
inline void sum(const float* a, std::size_t spatial, double out[B]) {
  double sums[detail::kRunningSums][B];
  detail::accumulate_lanes<B>(spatial, sums,
                              [&](std::size_t i, int) { return static_cast<double>(a[i]); });
  detail::store_lane_totals(sums, out);
}

template <int B>
inline void squared_deviation_sum(const float* a, const double center[B], std::size_t spatial,
                                  double out[B]) {
  double sums[detail::kRunningSums][B];
  detail::accumulate_lanes<B>(spatial, sums, [&](std::size_t i, int l) {
    const double d = a[i] - center[l];
    return d * d;
  });
  detail::store_lane_totals(sums, out);
}

}  // namespace scalar

// out[l] = sum over s of a[s * B + l]
template <int B>
inline void sum(const float* a, std::size_t spatial, double out[B]) {
#if defined(__SSE2__)
  alignas(16) double sums[detail::kRunningSums][B] = {};
  detail::for_each_position<B>(0, spatial, [&](std::size_t offset, int k) {
    for (int l = 0; l < B; l += 4) {
      const __m128 v = _mm_loadu_ps(a + offset + l);
      _mm_store_pd(&sums[k][l], _mm_add_pd(_mm_load_pd(&sums[k][l]), detail::low_pair(v)));
      _mm_store_pd(&sums[k][l + 2], _mm_add_pd(_mm_load_pd(&sums[k][l + 2]), detail::high_pair(v)));
    }
  });
  detail::store_lane_totals(sums, out);
#else
  scalar::sum(a, spatial, out);
#endif
}

// out[l] = sum over s of (a[s * B + l] - center[l])^2, in double.
template <int B>
inline void squared_deviation_sum(const float* a, const double center[B], std::size_t spatial,
                                  double out[B]) {
#if defined(__SSE2__)
  alignas(16) double sums[detail::kRunningSums][B] = {};
  alignas(16) double centers[B];
  for (int l = 0; l < B; ++l) centers[l] = center[l];
  detail::for_each_position<B>(0, spatial, [&](std::size_t offset, int k) {
    for (int l = 0; l < B; l += 4) {
      const __m128 v = _mm_loadu_ps(a + offset + l);
      const __m128d d_low = _mm_sub_pd(detail::low_pair(v), _mm_load_pd(&centers[l]));
      const __m128d d_high = _mm_sub_pd(detail::high_pair(v), _mm_load_pd(&centers[l + 2]));
      _mm_store_pd(&sums[k][l], _mm_add_pd(_mm_load_pd(&sums[k][l]), _mm_mul_pd(d_low, d_low)));
      _mm_store_pd(&sums[k][l + 2],
                   _mm_add_pd(_mm_load_pd(&sums[k][l + 2]), _mm_mul_pd(d_high, d_high)));
    }
  });
  detail::store_lane_totals(sums, out);
#else
  scalar::squared_deviation_sum(a, center, spatial, out);
#endif
}

// sums[l] = sum over s of a[s * B + l], dots[l] = sum over s of
// a[s * B + l] * b[s * B + l] (each product exact in double), fed the
// positions in order in pieces, so that a layer can do other work on a
// piece while it is in cache: add(first, last) with `first` a multiple of
// four and every piece but the last a multiple of four long.
template <int B>
class SumAndDotAccumulator {
 public:
  void add(const float* a, const float* b, std::size_t first, std::size_t last) {
#if defined(__SSE2__)
    detail::for_each_position<B>(first, last, [&](std::size_t offset, int k) {
      for (int l = 0; l < B; l += 2) {
        const __m128d va = detail::load_pair(a + offset + l);
        const __m128d vb = detail::load_pair(b + offset + l);
        _mm_store_pd(&sums_[k][l], _mm_add_pd(_mm_load_pd(&sums_[k][l]), va));
        _mm_store_pd(&dots_[k][l], _mm_add_pd(_mm_load_pd(&dots_[k][l]), _mm_mul_pd(va, vb)));
      }
    });
#else
    add_scalar(a, b, first, last);
#endif
  }
  // The portable form of add (the tests hold both to the plain sums).
  void add_scalar(const float* a, const float* b, std::size_t first, std::size_t last) {
    detail::for_each_position<B>(first, last, [&](std::size_t offset, int k) {
      for (int l = 0; l < B; ++l) {
        sums_[k][l] += a[offset + l];
        dots_[k][l] += static_cast<double>(a[offset + l]) * b[offset + l];
      }
    });
  }
  void totals(double sums[B], double dots[B]) const {
    detail::store_lane_totals(sums_, sums);
    detail::store_lane_totals(dots_, dots);
  }

 private:
  alignas(16) double sums_[detail::kRunningSums][B] = {};
  alignas(16) double dots_[detail::kRunningSums][B] = {};
};

template <int B>
inline void sum_and_dot(const float* a, const float* b, std::size_t spatial, double sums[B],
                        double dots[B]) {
  SumAndDotAccumulator<B> accumulator;
  accumulator.add(a, b, 0, spatial);
  accumulator.totals(sums, dots);
}

namespace scalar {

template <int B>
inline void sum_and_dot(const float* a, const float* b, std::size_t spatial, double sums[B],
                        double dots[B]) {
  SumAndDotAccumulator<B> accumulator;
  accumulator.add_scalar(a, b, 0, spatial);
  accumulator.totals(sums, dots);
}

}  // namespace scalar

}  // namespace xtrain::channel_statistics::blocked

// Sums over the values of one channel plane, accumulated in double with four
// running sums (so the additions do not wait on each other) in a fixed order:
// the result depends on the data alone, never on the thread count. BatchNorm,
// Scale and Bias build their per-channel statistics and gradients from these
// plane sums, added up over the samples in order.
//
// With SSE2 the four running sums are the two lanes of two registers, so the
// vector and the scalar code add the same numbers in the same order and give
// the same bits.
#pragma once

#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xtrain::channel_statistics {

namespace detail {

inline double total(const double s[4]) { return (s[0] + s[1]) + (s[2] + s[3]); }

#if defined(__SSE2__)
// Values k = 0, 1 and k = 2, 3 of four floats, in double.
inline __m128d low_pair(__m128 v) { return _mm_cvtps_pd(v); }
inline __m128d high_pair(__m128 v) { return _mm_cvtps_pd(_mm_movehl_ps(v, v)); }
#endif

}  // namespace detail

// sum_i a[i]
inline double sum(const float* a, std::size_t n) {
  double s[4] = {0, 0, 0, 0};
  std::size_t i = 0;
#if defined(__SSE2__)
  __m128d low = _mm_setzero_pd(), high = _mm_setzero_pd();
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(a + i);
    low = _mm_add_pd(low, detail::low_pair(v));
    high = _mm_add_pd(high, detail::high_pair(v));
  }
  _mm_storeu_pd(s, low);
  _mm_storeu_pd(s + 2, high);
#endif
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) s[k] += a[i + k];
  }
  for (; i < n; ++i) s[0] += a[i];
  return detail::total(s);
}

// sum_i (a[i] - center)^2, in double (center is usually the plane's mean).
inline double squared_deviation_sum(const float* a, double center, std::size_t n) {
  double s[4] = {0, 0, 0, 0};
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128d c = _mm_set1_pd(center);
  __m128d low = _mm_setzero_pd(), high = _mm_setzero_pd();
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(a + i);
    const __m128d d_low = _mm_sub_pd(detail::low_pair(v), c);
    const __m128d d_high = _mm_sub_pd(detail::high_pair(v), c);
    low = _mm_add_pd(low, _mm_mul_pd(d_low, d_low));
    high = _mm_add_pd(high, _mm_mul_pd(d_high, d_high));
  }
  _mm_storeu_pd(s, low);
  _mm_storeu_pd(s + 2, high);
#endif
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      const double d = a[i + k] - center;
      s[k] += d * d;
    }
  }
  for (; i < n; ++i) {
    const double d = a[i] - center;
    s[0] += d * d;
  }
  return detail::total(s);
}

// Both sum_i a[i] and sum_i a[i] * b[i] (each product exact in double),
// reading a once.
struct SumAndDot {
  double sum;
  double dot;
};
inline SumAndDot sum_and_dot(const float* a, const float* b, std::size_t n) {
  double s[4] = {0, 0, 0, 0};
  double p[4] = {0, 0, 0, 0};
  std::size_t i = 0;
#if defined(__SSE2__)
  __m128d s_low = _mm_setzero_pd(), s_high = _mm_setzero_pd();
  __m128d p_low = _mm_setzero_pd(), p_high = _mm_setzero_pd();
  for (; i + 4 <= n; i += 4) {
    const __m128 va = _mm_loadu_ps(a + i);
    const __m128 vb = _mm_loadu_ps(b + i);
    const __m128d a_low = detail::low_pair(va), a_high = detail::high_pair(va);
    s_low = _mm_add_pd(s_low, a_low);
    s_high = _mm_add_pd(s_high, a_high);
    p_low = _mm_add_pd(p_low, _mm_mul_pd(a_low, detail::low_pair(vb)));
    p_high = _mm_add_pd(p_high, _mm_mul_pd(a_high, detail::high_pair(vb)));
  }
  _mm_storeu_pd(s, s_low);
  _mm_storeu_pd(s + 2, s_high);
  _mm_storeu_pd(p, p_low);
  _mm_storeu_pd(p + 2, p_high);
#endif
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) {
      s[k] += a[i + k];
      p[k] += static_cast<double>(a[i + k]) * b[i + k];
    }
  }
  for (; i < n; ++i) {
    s[0] += a[i];
    p[0] += static_cast<double>(a[i]) * b[i];
  }
  return {detail::total(s), detail::total(p)};
}

}  // namespace xtrain::channel_statistics

// The per-value math of Reduction, MVN and ArgMax, shared by their CPU loops
// and CUDA kernels (src/layers/reduction_kernels.cu).
//
//   ReductionTerm{k}(x)             = x (SUM, MEAN), |x| (ASUM), x^2 (SUMSQ)
//   ReductionGradient{k}(x, c)      = c (SUM, MEAN), sign(x) c (ASUM), 2 c x (SUMSQ)
//                                     with c = dy[row] * coeff
//   MvnSquare(y)                    = y^2 (as pow(y, 2), Caffe's powx)
//   MvnStddev{eps}(variance)        = variance^0.5 + eps
//   Divide(a, b)                    = a / b
//   MvnGradient{-1/D}(dy, y, m, s, sigma) = (dy + (-1/D) (m + y s)) / sigma
//                                     with m = sum(dy), s = sum(dy y) over the row
//   argmax_ranks_before(a, i, b, j) = (a, i) > (b, j) lexicographically: the
//                                     order of std::greater<std::pair<float, int>>
#pragma once

#include <cmath>
#include <cstddef>

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

enum class ReductionKind { kSum, kAbsoluteSum, kSumOfSquares };  // MEAN is kSum, scaled

// reduce_rows' grid: a block per row up to kMaxRowBlocks, each block then
// summing rows block, block + grid, ... (a launch takes at most 2^31 - 1
// blocks, and the unsigned count of a larger size_t would wrap).
constexpr std::size_t kMaxRowBlocks = 65535;
XTRAIN_HOST_DEVICE inline unsigned row_blocks(std::size_t rows) {
  return static_cast<unsigned>(rows < kMaxRowBlocks ? rows : kMaxRowBlocks);
}

struct ReductionTerm {
  ReductionKind kind;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    switch (kind) {
      case ReductionKind::kAbsoluteSum:
        return fabsf(x);
      case ReductionKind::kSumOfSquares:
        return x * x;
      default:
        return x;
    }
  }
};

struct ReductionGradient {
  ReductionKind kind;
  XTRAIN_HOST_DEVICE float operator()(float x, float row_coeff) const {
    switch (kind) {
      case ReductionKind::kAbsoluteSum:
        return static_cast<float>((0.0f < x) - (x < 0.0f)) * row_coeff;
      case ReductionKind::kSumOfSquares:
        return 2 * row_coeff * x;
      default:
        return row_coeff;
    }
  }
};

struct MvnSquare {
  XTRAIN_HOST_DEVICE float operator()(float y) const { return powf(y, 2.0f); }
};

struct MvnStddev {
  float eps;
  XTRAIN_HOST_DEVICE float operator()(float variance) const { return powf(variance, 0.5f) + eps; }
};

struct Divide {
  XTRAIN_HOST_DEVICE float operator()(float a, float b) const { return a / b; }
};

struct MvnGradient {
  float minus_inverse_size;
  XTRAIN_HOST_DEVICE float operator()(float dy, float y, float dy_sum, float dy_y_sum,
                                      float stddev) const {
    const float projection = dy_sum + y * dy_y_sum;
    return (dy + minus_inverse_size * projection) / stddev;
  }
};

XTRAIN_HOST_DEVICE inline bool argmax_ranks_before(float a, int i, float b, int j) {
  return a > b || (!(b > a) && i > j);
}

}  // namespace xtrain::ops

// What the GPU's grid-wide reductions add up (the Reductions and
// TileReducers of core/reduction_tiling.hpp): sums in double of an array, of
// a product of two, of PReLU's slope gradient, BatchNorm's moments and the
// loss layers' per-position totals. XTRAIN_HOST_DEVICE, so the CPU tests run
// the very code the kernels run (tests/grid_reduction_test.cpp).
#pragma once

#include <cstddef>

#include "core/elementwise_ops.hpp"
#include "core/host_device.hpp"
#include "core/reduction_tiling.hpp"

namespace xtrain::reduction {

// sum of values[offset]
struct SumOf {
  using Partial = double;
  const float* values;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    sum += values[offset];
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// sum of (values[offset] - center)^2
struct SquaredDeviationOf {
  using Partial = double;
  const float* values;
  double center;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    const double d = values[offset] - center;
    sum += d * d;
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// sum of a[offset] and, when b is given, of a[offset] * b[offset] (each
// product exact in double). Scale/Bias parameter gradients, BatchNorm's
// gradient statistics.
struct SumAndDot {
  double sum;
  double dot;
};
struct SumAndDotOf {
  using Partial = SumAndDot;
  const float* a;
  const float* b;  // may be null: dot stays 0
  XTRAIN_HOST_DEVICE Partial identity() const { return {0, 0}; }
  XTRAIN_HOST_DEVICE void add(Partial& p, std::size_t, std::size_t offset) const {
    const float value = a[offset];
    p.sum += value;
    if (b) p.dot += static_cast<double>(value) * b[offset];
  }
  XTRAIN_HOST_DEVICE Partial combine(const Partial& x, const Partial& y) const {
    return {x.sum + y.sum, x.dot + y.dot};
  }
};

// sum of PReluSlopeGradient(x, dy): each term in float as on the CPU, their
// sum in double.
struct PReluSlopeSumOf {
  using Partial = double;
  const float* x;
  const float* dy;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    sum += ops::PReluSlopeGradient{}(x[offset], dy[offset]);
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// Count, sum and sum of squared deviations from the mean of some values;
// two sets combine exactly (Chan, Golub and LeVeque's pairwise update):
//   squares = squares_a + squares_b + (mean_b - mean_a)^2 * n_a * n_b / n
// BatchNorm's batch statistics, as the CPU's plane sums combine
// (batch_norm_layer.cpp combine_plane_statistics).
struct Moments {
  double count;
  double sum;
  double squares;
  XTRAIN_HOST_DEVICE double mean() const { return sum / count; }          // NaN for no values
  XTRAIN_HOST_DEVICE double variance() const { return squares / count; }  // biased
};
XTRAIN_HOST_DEVICE inline Moments combine_moments(const Moments& a, const Moments& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  const double count = a.count + b.count;
  const double shift = b.sum / b.count - a.sum / a.count;
  return {count, a.sum + b.sum,
          a.squares + b.squares + shift * shift * (a.count * b.count / count)};
}

// A tile's moments in two sweeps: its sum, then the squared deviations from
// the tile's mean (the second sweep finds the tile in cache).
struct MomentsOfTile {
  using Partial = Moments;
  const float* values;
  XTRAIN_HOST_DEVICE Partial identity() const { return {0, 0, 0}; }
  XTRAIN_HOST_DEVICE Partial combine(const Partial& a, const Partial& b) const {
    return combine_moments(a, b);
  }
  template <typename BlockTotal>
  XTRAIN_HOST_DEVICE Partial reduce_tile(const Tile& tile, BlockTotal& block_total) const {
    const double count = static_cast<double>(tile.end - tile.begin);
    const double sum = block_total(SumOf{values});
    const double center = count > 0 ? sum / count : 0.0;
    return {count, sum, block_total(SquaredDeviationOf{values, center})};
  }
};

// One position of a loss (or a label check): its loss value, whether it
// counts (its label is not ignored) and whether its label is invalid.
struct PositionLoss {
  float value = 0;
  bool counted = false;
  bool invalid = false;
};
// The totals over positions: the counted positions' sum (in double) and
// number, and the first position with an invalid label (-1 if none).
struct PositionTotals {
  double sum;
  unsigned long long counted;
  long long first_invalid;
};
XTRAIN_HOST_DEVICE inline void add_position(PositionTotals& totals, const PositionLoss& loss,
                                            std::size_t position) {
  if (loss.invalid) {
    // A thread visits its positions in increasing order: the first is the least.
    if (totals.first_invalid < 0) totals.first_invalid = static_cast<long long>(position);
    return;
  }
  if (!loss.counted) return;
  totals.sum += loss.value;
  ++totals.counted;
}
XTRAIN_HOST_DEVICE inline PositionTotals combine_positions(const PositionTotals& a,
                                                           const PositionTotals& b) {
  long long first = a.first_invalid;
  if (b.first_invalid >= 0 && (first < 0 || b.first_invalid < first)) first = b.first_invalid;
  return {a.sum + b.sum, a.counted + b.counted, first};
}

// Sums term(position) over the positions of a flat array (the tiling of
// (1, 1, n), where the offset is the position). Term: PositionLoss
// operator()(std::size_t position) const.
template <typename Term>
struct PositionSum {
  using Partial = PositionTotals;
  Term term;
  XTRAIN_HOST_DEVICE Partial identity() const { return {0, 0, -1}; }
  XTRAIN_HOST_DEVICE void add(Partial& totals, std::size_t, std::size_t position) const {
    add_position(totals, term(position), position);
  }
  XTRAIN_HOST_DEVICE Partial combine(const Partial& a, const Partial& b) const {
    return combine_positions(a, b);
  }
};

}  // namespace xtrain::reduction

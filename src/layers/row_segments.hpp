// The gradient of a row gather, as segmented sums: Embed's weight gradient,
// BatchReindex's and Filter's bottom gradients. Position p (of P) read row
// r_p of a table whose rows hold `width` values; backward adds
//   target[r, j] += source[p, j]   for every p with r_p = r, p in increasing order
// which is what the CPU loops do, one position after another.
//
// On the GPU one thread per column would walk all P positions (serial in P;
// that was the kernel before), and one thread per (position, column) would
// need float atomics, whose order, and so whose bits, change from run to run.
// Instead the host groups the positions by row (a stable sort: increasing p
// within a row) into segments, one per distinct row, and one thread per
// (segment, column) adds its segment's values in that order, starting from
// the target's value: every target element has one writer, no atomics, and
// the additions are the CPU's, so the bits are too. The parallelism is
// (distinct rows) x width; one row read by most positions (a padding index)
// still walks its positions in one thread per column.
//
// The plan is built on the host (the indices are read there: Filter and
// BatchReindex read them anyway, Embed's usually come from a data layer's
// host copy) and travels to the device as one array of size_t:
// [order (P) | segment starts (S + 1) | segment rows (S)].
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

#include "core/elementwise_ops.hpp"
#include "core/host_device.hpp"

namespace xtrain::ops {

// The plan as the kernel reads it (pointers into the one array).
struct RowSegments {
  const std::size_t* order = nullptr;   // positions, by row, increasing within a row
  const std::size_t* starts = nullptr;  // segment s is order[starts[s] .. starts[s + 1])
  const std::size_t* rows = nullptr;    // the row segment s adds into
  std::size_t segments = 0;
  std::size_t width = 0;  // values per row

  XTRAIN_HOST_DEVICE std::size_t threads() const { return segments * width; }
};

// Thread j of the kernel: column j % width of segment j / width.
XTRAIN_HOST_DEVICE inline void add_segment_column(const RowSegments& plan, const float* source,
                                                  float* target, std::size_t j) {
  const std::size_t segment = j / plan.width;
  const std::size_t column = j - segment * plan.width;
  float* out = target + plan.rows[segment] * plan.width + column;
  const Add add;  // the CPU loops' functor
  float sum = *out;
  for (std::size_t q = plan.starts[segment]; q < plan.starts[segment + 1]; ++q) {
    sum = add(sum, source[plan.order[q] * plan.width + column]);
  }
  *out = sum;
}

// The host's part: the array [order | starts | rows] for positions
// 0 .. positions - 1 reading rows row_of(p) (a std::size_t).
template <typename RowOf>
std::vector<std::size_t> plan_row_segments(std::size_t positions, RowOf row_of) {
  std::vector<std::size_t> order(positions);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<std::size_t> rows_of(positions);
  for (std::size_t p = 0; p < positions; ++p) rows_of[p] = row_of(p);
  std::stable_sort(order.begin(), order.end(),
                   [&rows_of](std::size_t a, std::size_t b) { return rows_of[a] < rows_of[b]; });
  std::vector<std::size_t> starts;
  std::vector<std::size_t> rows;
  for (std::size_t q = 0; q < positions; ++q) {
    const std::size_t row = rows_of[order[q]];
    if (rows.empty() || rows.back() != row) {
      starts.push_back(q);
      rows.push_back(row);
    }
  }
  starts.push_back(positions);
  std::vector<std::size_t> packed = std::move(order);
  packed.insert(packed.end(), starts.begin(), starts.end());
  packed.insert(packed.end(), rows.begin(), rows.end());
  return packed;
}

// The kernel's view of a packed plan of `positions` positions (`packed` on
// either device).
inline RowSegments row_segments_view(const std::size_t* packed, std::size_t packed_size,
                                     std::size_t positions, std::size_t width) {
  RowSegments plan;
  plan.segments = (packed_size - positions - 1) / 2;
  plan.order = packed;
  plan.starts = packed + positions;
  plan.rows = plan.starts + plan.segments + 1;
  plan.width = width;
  return plan;
}

}  // namespace xtrain::ops

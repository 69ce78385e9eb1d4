// The GPU side of layers/row_segments.hpp for a layer: the plan, built on
// the host from the positions' rows, uploaded to the device, and the
// segmented sums run on the calling thread's stream. Compiled only in CUDA
// builds (layers/row_gradient_cuda.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "layers/row_segments.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

class DeviceRowGradient {
 public:
  // target[r, j] += source[p, j] for the positions p reading row r
  // (row_of(p), a std::size_t), j < width; device pointers.
  template <typename RowOf>
  void add(std::size_t positions, RowOf row_of, std::size_t width, const float* source,
           float* target) {
    if (positions == 0 || width == 0) return;
    run(ops::plan_row_segments(positions, row_of), positions, width, source, target);
  }

 private:
  void run(const std::vector<std::size_t>& packed, std::size_t positions, std::size_t width,
           const float* source, float* target);

  // The plan's device copy; grown, never shrunk, so that steady state
  // allocates nothing (pinned host memory is slow to allocate).
  std::unique_ptr<SyncedMemory> plan_;
};

}  // namespace xtrain

// Summing a loss over positions on the device and bringing the total to the
// host: the reduction all loss kernels share (src/layers/loss_kernels.cu), and
// Embed's index check (copy_kernels.cu).
//
// A position term returns its loss value, whether it counts (not ignored)
// and whether its label is invalid (reduction::PositionLoss); the host gets
// the sum (added in double, returned as float), the number counted and the
// first invalid position (-1 if none). The positions are summed by the
// grid-wide reduction of grid_reduction.cuh over the flat array (1, 1, n):
// many blocks for a segmentation net's millions of positions, one for a
// classifier's batch, the order of additions fixed by n alone, so the loss is
// deterministic.
#pragma once

#include <cstddef>

#include "core/reduction_terms.hpp"
#include "cuda/cuda_context.hpp"
#include "cuda/grid_reduction.cuh"
#include "layers/loss_kernels.hpp"

namespace xtrain::cuda {

using reduction::PositionLoss;

struct WriteLossTotals {
  LossTotals* totals;
  __device__ void operator()(std::size_t, const reduction::PositionTotals& total) const {
    totals->sum = static_cast<float>(total.sum);
    totals->counted = total.counted;
    totals->first_invalid = total.first_invalid;
  }
};

// Runs the reduction into `scratch` (device memory of sizeof(LossTotals)) and
// waits for the result. Term: __device__ PositionLoss operator()(std::size_t).
template <typename Term>
LossTotals sum_positions(std::size_t n, Term term, void* scratch) {
  LossTotals totals;
  if (n == 0) return totals;
  auto* device_totals = static_cast<LossTotals*>(scratch);
  reduce_per_channel(reduction::ChannelTiling::plan(1, 1, n),
                     reduction::SingleSweep<reduction::PositionSum<Term>>{{term}},
                     WriteLossTotals{device_totals}, stream());
  XTRAIN_CUDA_CHECK(cudaMemcpyAsync(&totals, device_totals, sizeof(LossTotals),
                                    cudaMemcpyDeviceToHost, stream()));
  XTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return totals;
}

}  // namespace xtrain::cuda

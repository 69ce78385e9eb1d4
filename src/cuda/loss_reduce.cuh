// Summing a loss over positions on the device and bringing the total to the
// host: the reduction all loss kernels share (src/cuda/loss_kernels.cu).
//
// One block walks every position (grid-stride within the block), so the sum
// is deterministic; loss layers see a batch's worth of positions, which one
// block covers quickly. A position term returns its loss value, whether it
// counts (not ignored) and whether its label is invalid; the host gets the
// float sum, the number counted and the first invalid position (-1 if none).
#pragma once

#include <cstddef>

#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "cuda/loss_kernels.hpp"

namespace xtrain::cuda {

struct PositionLoss {
  float value = 0;
  bool counted = false;
  bool invalid = false;
};

template <typename Term>
__global__ void sum_positions_kernel(std::size_t n, Term term, LossTotals* totals) {
  __shared__ float sums[kThreadsPerBlock];
  __shared__ unsigned long long counts[kThreadsPerBlock];
  __shared__ long long first_invalid[kThreadsPerBlock];
  float sum = 0;
  unsigned long long counted = 0;
  long long invalid = -1;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
    const PositionLoss loss = term(i);
    if (loss.invalid) {
      if (invalid < 0) invalid = static_cast<long long>(i);  // i only grows per thread
      continue;
    }
    if (!loss.counted) continue;
    sum += loss.value;
    ++counted;
  }
  sums[threadIdx.x] = sum;
  counts[threadIdx.x] = counted;
  first_invalid[threadIdx.x] = invalid;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sums[threadIdx.x] += sums[threadIdx.x + half];
      counts[threadIdx.x] += counts[threadIdx.x + half];
      const long long other = first_invalid[threadIdx.x + half];
      if (other >= 0 && (first_invalid[threadIdx.x] < 0 || other < first_invalid[threadIdx.x])) {
        first_invalid[threadIdx.x] = other;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    totals->sum = sums[0];
    totals->counted = counts[0];
    totals->first_invalid = first_invalid[0];
  }
}

// Runs the reduction into `scratch` (device memory of sizeof(LossTotals)) and
// waits for the result.
template <typename Term>
LossTotals sum_positions(std::size_t n, Term term, void* scratch) {
  LossTotals totals;
  if (n == 0) return totals;
  auto* device_totals = static_cast<LossTotals*>(scratch);
  sum_positions_kernel<<<1, kThreadsPerBlock, 0, stream()>>>(n, term, device_totals);
  check_launch();
  XTRAIN_CUDA_CHECK(cudaMemcpyAsync(&totals, device_totals, sizeof(LossTotals),
                                    cudaMemcpyDeviceToHost, stream()));
  XTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return totals;
}

}  // namespace xtrain::cuda

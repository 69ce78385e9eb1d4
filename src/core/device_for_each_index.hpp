// op(i) for i in [0, n) where the arrays live: for a functor that holds its
// arrays and indexes them itself, where one element's result reads inputs at
// other offsets (LSTMUnit's four gates of one hidden unit). The CPU runs the
// loop on the thread pool, a GPU the kernel of
// cuda/for_each_index_kernel.cuh, which the module owning the functor
// instantiates (a missing one is a link error). Iterations must be
// independent; Op::kWorkPerIndex (float operations of one call) decides
// whether the CPU loop is split across threads.
#pragma once

#include <cstdint>

#include "xtrain/device.hpp"

// The kernels' files (nvcc) need only the declaration below; the CPU loop
// and its OpenMP pragmas are for the host compiler.
#ifndef __CUDACC__
#include "core/parallel_loop.hpp"
#endif

namespace xtrain {

#ifdef XTRAIN_USE_CUDA
namespace cuda {
template <typename Op>
void for_each_index(std::int64_t n, const Op& op);
}  // namespace cuda
#endif

#ifndef __CUDACC__
namespace ops {

template <typename Op>
void for_each_index_on(const Device& device, std::int64_t n, const Op& op) {
#ifdef XTRAIN_USE_CUDA
  if (device.is_gpu()) {
    cuda::for_each_index(n, op);
    return;
  }
#endif
  (void)device;
  parallel_for(n, Op::kWorkPerIndex, [&op](std::int64_t i) { op(i); });
}

}  // namespace ops
#endif

}  // namespace xtrain

// op(a[i], b[i], ...) for i in [0, n), the arrays updated in place through
// references: the CPU loop of the multi-array functors (a solver step updates
// a parameter's gradient and its history together). The CUDA counterpart is
// the for_each kernel of src/cuda/device_apply_kernels.cuh.
#pragma once

#include <cstddef>

#include "core/parallel_loop.hpp"

namespace xtrain::ops {

template <typename Op, typename... Arrays>
inline void for_each_cpu(std::size_t n, Op op, Arrays*... arrays) {
  const std::ptrdiff_t count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel if (n >= kMinParallelWork)
  {
    const Op local_op = op;  // see ops::apply_cpu: keeps the loop vectorisable
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < count; ++i) local_op(arrays[i]...);
  }
}

}  // namespace xtrain::ops

// The GPU kernels of Upsample: its functors (layers/upsample_ops.hpp), which
// the CPU loop also runs, through the one-thread-per-index kernel of
// for_each_index_kernel.cuh.
#include "cuda/for_each_index_kernel.cuh"
#include "layers/upsample_ops.hpp"

namespace xtrain::cuda {

template void for_each_index(std::int64_t, const ops::UpsampleForward&);
template void for_each_index(std::int64_t, const ops::UpsampleBackward&);

}  // namespace xtrain::cuda

// The GPU kernels of core's functors (core/elementwise_ops.hpp) that Blob
// runs through ops::apply_on: Blob::update (Difference) and
// Blob::scale_data / scale_diff (ScaleBy). The solvers use them too.
#include "core/elementwise_ops.hpp"
#include "cuda/device_apply_kernels.cuh"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::ScaleBy&, float*, const float*);
template void apply(std::size_t, const ops::Difference&, float*, const float*, const float*);

}  // namespace xtrain::cuda

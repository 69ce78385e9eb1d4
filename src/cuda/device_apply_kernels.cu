// The GPU kernels of core's functors (core/elementwise_ops.hpp) that Blob
// runs through ops::apply_on: Blob::update (Difference) and
// Blob::scale_data / scale_diff (ScaleBy), and the rounding of mixed
// precision. The solvers use them too.
#include "core/elementwise_ops.hpp"
#include "core/number_rounding.hpp"
#include "cuda/device_apply_kernels.cuh"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::ScaleBy&, float*, const float*);
template void apply(std::size_t, const ops::Difference&, float*, const float*, const float*);
// Storing values in a 16-bit type (core/number_rounding.hpp).
template void apply(std::size_t, const ops::RoundToBfloat16&, float*, const float*);
template void apply(std::size_t, const ops::RoundToFloat16&, float*, const float*);

}  // namespace xtrain::cuda

// The GPU kernels of the solvers' functors (solvers/update_ops.hpp): the
// launchers of device_apply_kernels.hpp instantiated for each, so that
// ops::apply_on / ops::for_each_on (core/device_apply.hpp) run them on a GPU.
#include "cuda/device_apply_kernels.cuh"
#include "solvers/update_ops.hpp"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::AddScaled&, float*, const float*, const float*);
template void apply(std::size_t, const ops::AddScaledSign&, float*, const float*, const float*);

template void for_each(std::size_t, const ops::MomentumStep&, float*, float*);
template void for_each(std::size_t, const ops::NesterovStep&, float*, float*);
template void for_each(std::size_t, const ops::AdaGradStep&, float*, float*);
template void for_each(std::size_t, const ops::RMSPropStep&, float*, float*);
template void for_each(std::size_t, const ops::AdamStep&, float*, float*, float*);
template void for_each(std::size_t, const ops::AdaDeltaStep&, float*, float*, float*);

}  // namespace xtrain::cuda

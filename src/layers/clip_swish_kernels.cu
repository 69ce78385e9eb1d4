// The GPU kernels of Clip's and Swish's functors (core/elementwise_ops.hpp),
// which their layers run through ops::apply_on: the same arithmetic as the
// CPU loops, instantiated here by the layers module that uses them.
#include "core/elementwise_ops.hpp"
#include "cuda/device_apply_kernels.cuh"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::ClipForward&, float*, const float*);
template void apply(std::size_t, const ops::ClipBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::SwishSigmoid&, float*, const float*);
template void apply(std::size_t, const ops::Multiply&, float*, const float*, const float*);
template void apply(std::size_t, const ops::SwishBackward&, float*, const float*, const float*,
                    const float*);

}  // namespace xtrain::cuda

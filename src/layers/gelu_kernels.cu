// The GPU kernels of GELU's functors (core/elementwise_ops.hpp), which
// layers/gelu_layer.cpp runs through ops::apply_on: the same arithmetic as
// the CPU loop. (Its copy of x in place uses ops::ScaleBy, instantiated in
// cuda/device_apply_kernels.cu.)
#include "core/elementwise_ops.hpp"
#include "cuda/device_apply_kernels.cuh"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::GeluForward&, float*, const float*);
template void apply(std::size_t, const ops::GeluBackward&, float*, const float*, const float*);

}  // namespace xtrain::cuda

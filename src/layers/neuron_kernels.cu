// The GPU kernels of the neuron layers that run their functors through
// cuda::apply (layers/elementwise_neuron_layer.hpp): y = Forward(x) and
// dx = Backward(y or x, dy).
#include "core/elementwise_ops.hpp"
#include "cuda/device_apply_kernels.cuh"

namespace xtrain::cuda {

template void apply(std::size_t, const ops::SigmoidForward&, float*, const float*);
template void apply(std::size_t, const ops::SigmoidBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::TanhForward&, float*, const float*);
template void apply(std::size_t, const ops::TanhBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::BnllForward&, float*, const float*);
template void apply(std::size_t, const ops::BnllBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::AbsForward&, float*, const float*);
template void apply(std::size_t, const ops::AbsBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::ExpForward&, float*, const float*);
template void apply(std::size_t, const ops::ExpBackward&, float*, const float*, const float*);
template void apply(std::size_t, const ops::LogForward&, float*, const float*);
template void apply(std::size_t, const ops::LogBackward&, float*, const float*, const float*);

}  // namespace xtrain::cuda

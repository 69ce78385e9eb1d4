// CUDA launchers for the elementwise functors that core/device_apply.hpp
// runs on a GPU (ops::apply_on, ops::for_each_on). Device pointers; the
// calling thread's stream.
//
// Declared once, as templates, so that core's dispatch needs no list of the
// functors of the modules above it: each module instantiates them for its
// own functors from the definitions in device_apply_kernels.cuh (core's
// ScaleBy and Difference in device_apply_kernels.cu, the solvers' steps in
// update_kernels.cu).
#pragma once

#include <cstddef>

namespace xtrain::cuda {

// out[i] = op(in[i]...) for i in [0, n); `out` may alias an input.
template <typename Op, typename... Inputs>
void apply(std::size_t n, const Op& op, float* out, const Inputs*... in);

// op(arrays[i]...) for i in [0, n), updating the arrays in place.
template <typename Op, typename... Arrays>
void for_each(std::size_t n, const Op& op, Arrays*... arrays);

}  // namespace xtrain::cuda

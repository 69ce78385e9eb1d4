// CUDA launchers of Scale and Bias: an (outer, dim, inner) array combined with
// a per-d operand (src/layers/broadcast_axes.hpp), and the per-d sums of their
// gradients. Functors from src/layers/scale_ops.hpp and
// src/core/elementwise_ops.hpp; device pointers; the calling thread's stream.
// Compiled only in CUDA builds.
#pragma once

#include <cstddef>

namespace xtrain::cuda {

// y[o, d, i] = Add(x[o, d, i], bias[d])
void bias_forward(const float* x, const float* bias, float* y, std::size_t outer, std::size_t dim,
                  std::size_t inner);
// y[o, d, i] = ScaleShift(x, scale[d], bias ? bias[d] : 0), then ReLU if fused_relu.
void scale_forward(const float* x, const float* scale, const float* bias, float* y,
                   std::size_t outer, std::size_t dim, std::size_t inner, bool fused_relu);
// dx[o, d, i] = Multiply(dy[o, d, i], scale[d])
void scale_backward(const float* dy, const float* scale, float* dx, std::size_t outer,
                    std::size_t dim, std::size_t inner);
// Per d, in double: sums[d] (+)= sum_{o,i} dy, and, when dots is given,
// dots[d] (+)= sum_{o,i} dy x (x must then be given). `accumulate` adds to the
// arrays (a parameter's diff); otherwise they are overwritten (a bottom's).
// A grid-wide reduction (grid_reduction.cuh): deterministic.
void per_dim_sums(const float* dy, const float* x, std::size_t outer, std::size_t dim,
                  std::size_t inner, float* sums, float* dots, bool accumulate);

}  // namespace xtrain::cuda

// CUDA launchers for the solver functors of src/solvers/update_ops.hpp, one
// overload per functor (the kernels are templates instantiated in
// update_kernels.cu). Device pointers; the calling thread's stream.
#pragma once

#include <cstddef>

#include "solvers/update_ops.hpp"

namespace xtrain::cuda {

// out[i] = op(in[i]...)
void apply(std::size_t n, const ops::AddScaled& op, float* out, const float* x, const float* y);
void apply(std::size_t n, const ops::AddScaledSign& op, float* out, const float* x, const float* y);
void apply(std::size_t n, const ops::ScaleBy& op, float* out, const float* x);
void apply(std::size_t n, const ops::Difference& op, float* out, const float* a, const float* b);

// op(a[i], b[i], ...), updating the arrays in place.
void for_each(std::size_t n, const ops::MomentumStep& op, float* diff, float* velocity);
void for_each(std::size_t n, const ops::NesterovStep& op, float* diff, float* velocity);
void for_each(std::size_t n, const ops::AdaGradStep& op, float* diff, float* squares);
void for_each(std::size_t n, const ops::RMSPropStep& op, float* diff, float* mean_square);
void for_each(std::size_t n, const ops::AdamStep& op, float* diff, float* first_moment,
              float* second_moment);
void for_each(std::size_t n, const ops::AdaDeltaStep& op, float* diff, float* gradient_squares,
              float* update_squares);

}  // namespace xtrain::cuda

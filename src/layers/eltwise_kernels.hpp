// CUDA launchers of the Eltwise layer, applying the functors of
// src/layers/eltwise_ops.hpp on the calling thread's stream. Device pointers;
// n values each. Compiled only in CUDA builds.
#pragma once

#include <cstddef>

namespace xtrain::cuda {

// out = 0 + coefficient * x (the first bottom of a SUM)
void eltwise_sum_first(const float* x, float coefficient, float* out, std::size_t n);
// out += coefficient * x (each further bottom)
void eltwise_sum_next(const float* x, float coefficient, float* out, std::size_t n);
// dx = y / x * dy (PROD without stable_prod_grad)
void eltwise_prod_gradient_from_top(const float* y, const float* x, const float* dy, float* dx,
                                    std::size_t n);
// MAX of bottoms 0 and 1 into out, winner = the bottom it came from.
void eltwise_max_first(const float* a, const float* b, float* out, int* winner, std::size_t n);
// Folds bottom k into out and winner.
void eltwise_max_next(const float* x, int k, float* out, int* winner, std::size_t n);
// dx = winner == k ? dy : 0
void eltwise_max_backward(const int* winner, const float* dy, int k, float* dx, std::size_t n);

}  // namespace xtrain::cuda

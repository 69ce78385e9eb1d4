// Dense math on device arrays, the GPU counterpart of
// src/core/math_functions.hpp (same names, same row-major conventions):
// cuBLAS for the BLAS calls, our kernels for the rest. Everything runs on the
// calling thread's stream (src/cuda/cuda_context.hpp); dot and asum wait for
// their result. Compiled only in CUDA builds; all pointers are device pointers.
#pragma once

#include <cstddef>

#include "core/math_functions.hpp"

namespace xtrain::math::gpu {

// C = alpha * op(A) * op(B) + beta * C;  op(A) is M x K, op(B) is K x N.
void gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c);
// y = alpha * op(A) * x + beta * y;  A is M x N.
void gemv(Transpose trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
          float* y);
// y += alpha * x
void axpy(std::size_t n, float alpha, const float* x, float* y);
// y = alpha * x + beta * y
void axpby(std::size_t n, float alpha, const float* x, float beta, float* y);
void scale(std::size_t n, float alpha, float* x);
void copy(std::size_t n, const float* x, float* y);
void set(std::size_t n, float value, float* x);
float dot(std::size_t n, const float* x, const float* y);
float asum(std::size_t n, const float* x);

// rows runs of `length` values: y[r * y_stride + j] = x[r * x_stride + j]
// (Concat, Slice, Tile: one cudaMemcpy2DAsync).
void copy_rows(std::size_t rows, std::size_t length, const float* x, std::size_t x_stride, float* y,
               std::size_t y_stride);

}  // namespace xtrain::math::gpu

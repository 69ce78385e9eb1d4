// Dense math on host arrays: BLAS (row-major; GEMM through oneDNN where it
// is built in, the rest through OpenBLAS), plus the few vector helpers the
// layers share. Internal to libxtrain.
#pragma once

#include <cstddef>

namespace xtrain::math {

enum class Transpose { kNo, kYes };

// C = alpha * op(A) * op(B) + beta * C;  op(A) is M x K, op(B) is K x N.
void gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha,
          const float* a, const float* b, float beta, float* c);
// y = alpha * op(A) * x + beta * y;  A is M x N.
void gemv(Transpose trans_a, int m, int n, float alpha, const float* a, const float* x,
          float beta, float* y);
// y += alpha * x
void axpy(std::size_t n, float alpha, const float* x, float* y);
// y = alpha * x + beta * y
void axpby(std::size_t n, float alpha, const float* x, float beta, float* y);
void scale(std::size_t n, float alpha, float* x);
void copy(std::size_t n, const float* x, float* y);
void set(std::size_t n, float value, float* x);
float dot(std::size_t n, const float* x, const float* y);
float asum(std::size_t n, const float* x);

}  // namespace xtrain::math

// math::gpu: cuBLAS for the BLAS calls, a fill kernel for set(), all on the
// calling thread's stream and cuBLAS handle (src/cuda/cuda_context.hpp).
//
// Row-major arrays in a column-major library: a row-major M x N matrix is the
// column-major N x M matrix of its transpose, with leading dimension N. So
// C = op(A) op(B) (row-major) is computed as C^T = op(B)^T op(A)^T, i.e.
// cuBLAS gemm with the operands swapped and m, n exchanged (as Caffe does).
#include <algorithm>

#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "cuda/math_gpu.hpp"

namespace xtrain::math::gpu {
namespace {

cublasOperation_t to_cublas(Transpose t) {
  return t == Transpose::kYes ? CUBLAS_OP_T : CUBLAS_OP_N;
}

__global__ void fill_kernel(std::size_t n, float value, float* x) {
  for (std::size_t i = cuda::grid_start(); i < n; i += cuda::grid_stride()) x[i] = value;
}

}  // namespace

void gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  if (m == 0 || n == 0) return;
  // Row-major leading dimensions, as in math::gemm: op(A) is M x K, op(B) K x N.
  // cuBLAS refuses a leading dimension below 1 even when K = 0 (C = beta C).
  const int lda = std::max(1, trans_a == Transpose::kNo ? k : m);
  const int ldb = std::max(1, trans_b == Transpose::kNo ? n : k);
  // Column-major C^T (N x M, ld N) = op(B)^T (N x K) * op(A)^T (K x M).
  XTRAIN_CUBLAS_CHECK(cublasSgemm(cuda::cublas_handle(), to_cublas(trans_b), to_cublas(trans_a), n,
                                  m, k, &alpha, b, ldb, a, lda, &beta, c, n));
}

void gemv(Transpose trans_a, int m, int n, float alpha, const float* a, const float* x, float beta,
          float* y) {
  // Row-major A (M x N) is column-major A^T (N x M, ld N): y = A x is then the
  // transposed product of that matrix, and y = A^T x the plain one.
  const cublasOperation_t op = trans_a == Transpose::kNo ? CUBLAS_OP_T : CUBLAS_OP_N;
  // (M or N = 0: cuBLAS returns at once, as OpenBLAS does; lda must still be >= 1.)
  XTRAIN_CUBLAS_CHECK(
      cublasSgemv(cuda::cublas_handle(), op, n, m, &alpha, a, std::max(1, n), x, 1, &beta, y, 1));
}

void axpy(std::size_t n, float alpha, const float* x, float* y) {
  if (n == 0) return;
  XTRAIN_CUBLAS_CHECK(
      cublasSaxpy_64(cuda::cublas_handle(), static_cast<int64_t>(n), &alpha, x, 1, y, 1));
}

void axpby(std::size_t n, float alpha, const float* x, float beta, float* y) {
  scale(n, beta, y);
  axpy(n, alpha, x, y);
}

void scale(std::size_t n, float alpha, float* x) {
  if (n == 0) return;
  XTRAIN_CUBLAS_CHECK(cublasSscal_64(cuda::cublas_handle(), static_cast<int64_t>(n), &alpha, x, 1));
}

void copy(std::size_t n, const float* x, float* y) {
  if (x == y || n == 0) return;
  XTRAIN_CUDA_CHECK(
      cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, cuda::stream()));
}

void copy_rows(std::size_t rows, std::size_t length, const float* x, std::size_t x_stride, float* y,
               std::size_t y_stride) {
  if (rows == 0 || length == 0) return;
  if (rows == 1 || (x_stride == length && y_stride == length)) {
    // One contiguous run (no pitch limits apply).
    XTRAIN_CUDA_CHECK(cudaMemcpyAsync(y, x, rows * length * sizeof(float), cudaMemcpyDeviceToDevice,
                                      cuda::stream()));
    return;
  }
  XTRAIN_CUDA_CHECK(cudaMemcpy2DAsync(y, y_stride * sizeof(float), x, x_stride * sizeof(float),
                                      length * sizeof(float), rows, cudaMemcpyDeviceToDevice,
                                      cuda::stream()));
}

void set(std::size_t n, float value, float* x) {
  if (n == 0) return;
  if (value == 0.0f) {
    XTRAIN_CUDA_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), cuda::stream()));
    return;
  }
  fill_kernel<<<cuda::blocks_for(n), cuda::kThreadsPerBlock, 0, cuda::stream()>>>(n, value, x);
  cuda::check_launch();
}

// The handle keeps cuBLAS's default host pointer mode, so these return only
// once the result is on the host.
float dot(std::size_t n, const float* x, const float* y) {
  float result = 0;
  if (n == 0) return result;
  XTRAIN_CUBLAS_CHECK(
      cublasSdot_64(cuda::cublas_handle(), static_cast<int64_t>(n), x, 1, y, 1, &result));
  return result;
}

float asum(std::size_t n, const float* x) {
  float result = 0;
  if (n == 0) return result;
  XTRAIN_CUBLAS_CHECK(
      cublasSasum_64(cuda::cublas_handle(), static_cast<int64_t>(n), x, 1, &result));
  return result;
}

}  // namespace xtrain::math::gpu

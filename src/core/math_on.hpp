// Dense math where the arrays live, so that a layer states its products
// once for both devices:
//
//   const math::On blas = math::on(device);
//   blas.gemm(Transpose::kNo, Transpose::kYes, m, n, k, 1.0f, x, w, 0.0f, y);
//
// On the CPU these are math:: (core/math_functions.hpp: oneDNN's GEMM or
// OpenBLAS), on a GPU math::gpu:: (cuBLAS, on the thread's stream), with
// the same row-major conventions; the pointers must live on that device
// (core/device_apply.hpp's data_on and friends give a blob's).
#pragma once

#include <cstddef>
#include <vector>

#include "core/math_functions.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"

#ifdef XTRAIN_USE_CUDA
#include "cuda/math_gpu.hpp"
#define XTRAIN_MATH_ON(on_gpu, call) (on_gpu ? math::gpu::call : math::call)
#else
#define XTRAIN_MATH_ON(on_gpu, call) ((void)on_gpu, math::call)
#endif

namespace xtrain::math {

class On {
 public:
  explicit On(const Device& device) : gpu_(device.is_gpu()) {}

  // C = alpha * op(A) * op(B) + beta * C;  op(A) is M x K, op(B) is K x N.
  void gemm(Transpose trans_a, Transpose trans_b, int m, int n, int k, float alpha, const float* a,
            const float* b, float beta, float* c) const {
    XTRAIN_MATH_ON(gpu_, gemm(trans_a, trans_b, m, n, k, alpha, a, b, beta, c));
  }
  // y = alpha * op(A) * x + beta * y;  A is M x N.
  void gemv(Transpose trans_a, int m, int n, float alpha, const float* a, const float* x,
            float beta, float* y) const {
    XTRAIN_MATH_ON(gpu_, gemv(trans_a, m, n, alpha, a, x, beta, y));
  }
  void axpy(std::size_t n, float alpha, const float* x, float* y) const {
    XTRAIN_MATH_ON(gpu_, axpy(n, alpha, x, y));
  }
  void scale(std::size_t n, float alpha, float* x) const {
    XTRAIN_MATH_ON(gpu_, scale(n, alpha, x));
  }
  void set(std::size_t n, float value, float* x) const { XTRAIN_MATH_ON(gpu_, set(n, value, x)); }

 private:
  bool gpu_;
};

inline On on(const Device& device) { return On(device); }

// A vector of ones on either device, for the bias GEMMs (y += 1 * b^T) and
// sums over rows (db = dy^T * 1): written once per length on the host and
// copied to a GPU by the blob on first use there.
class Ones {
 public:
  const float* on(const Device& device, std::size_t n) {
    if (length_ != n) {
      blob_.reshape(std::vector<int>{static_cast<int>(n)});
      math::set(n, 1.0f, blob_.mutable_cpu_data());
      length_ = n;
    }
    return device.is_gpu() ? blob_.gpu_data() : blob_.cpu_data();
  }

 private:
  Blob blob_;
  std::size_t length_ = 0;
};

}  // namespace xtrain::math

#undef XTRAIN_MATH_ON

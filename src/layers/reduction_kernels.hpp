// CUDA launchers of Reduction, MVN and ArgMax: per-row work over a (rows,
// row_size) array, applying the functors of src/layers/reduction_ops.hpp.
// Device pointers; the calling thread's stream. Compiled only in CUDA builds.
#pragma once

#include <cstddef>

#include "layers/reduction_ops.hpp"

namespace xtrain::cuda {

// y[r] = coeff * sum_j ReductionTerm{kind}(x[r, j]) (summed in double; no
// multiply when coeff is 1, as on the CPU).
void reduce_rows(const float* x, std::size_t rows, std::size_t row_size, ops::ReductionKind kind,
                 float coeff, float* y);
// dx[r, j] = ReductionGradient{kind}(x[r, j], dy[r] * coeff)
void reduce_rows_backward(const float* x, const float* dy, std::size_t rows, std::size_t row_size,
                          ops::ReductionKind kind, float coeff, float* dx);

// MVN steps. out[r, j] = Add(in[r, j], -row_values[r])
void mvn_subtract_row_values(const float* in, const float* row_values, float* out, std::size_t rows,
                             std::size_t row_size);
// out = MvnSquare(in)
void mvn_square(const float* in, float* out, std::size_t n);
// variance[r] = MvnStddev{eps}(variance[r])
void mvn_stddev(float* variance, std::size_t rows, float eps);
// y[r, j] = Divide(y[r, j], row_values[r])
void mvn_divide_by_row_values(float* y, const float* row_values, std::size_t rows,
                              std::size_t row_size);
// dx[r, j] = MvnGradient{minus_inverse_size}(dy, y, dy_sums[r], dy_y_sums[r], stddev[r])
void mvn_backward(const float* dy, const float* y, const float* dy_sums, const float* dy_y_sums,
                  const float* stddev, float* dx, std::size_t rows, std::size_t row_size,
                  float minus_inverse_size);

// ArgMax: for each of `searches` lines of `candidates` values (line s starts at
// (s / stride) * candidates * stride + s % stride, values `stride` apart),
// the top_k (value, index) pairs in argmax_ranks_before order. Output layout
// as ArgMaxLayer's CPU pass: with_axis: y[((s / stride) * k + j) * stride + s % stride]
// = value or index; else index at y[s * k + j] (or y[2 s k + j], and the
// value at y[2 s k + k + j] with out_max_val).
void argmax(const float* x, float* y, std::size_t searches, std::size_t candidates,
            std::size_t stride, int top_k, bool with_axis, bool out_max_val);

}  // namespace xtrain::cuda

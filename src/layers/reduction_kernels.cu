// The kernels of Reduction, MVN and ArgMax (functors: src/layers/reduction_ops.hpp).
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/reduction_kernels.hpp"

namespace xtrain::cuda {
namespace {

// A block per row (row_blocks: rows block, block + grid, ... when there are
// more rows than blocks): the threads stride over the row, then add up
// their partial sums in shared memory.
__global__ void reduce_rows_kernel(std::size_t rows, std::size_t row_size,
                                   ops::ReductionTerm term, float coeff, const float* x,
                                   float* y) {
  __shared__ double partial[kThreadsPerBlock];
  for (std::size_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float* values = x + row * row_size;
    double sum = 0;
    for (std::size_t j = threadIdx.x; j < row_size; j += blockDim.x) sum += term(values[j]);
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      const float total = static_cast<float>(partial[0]);
      y[row] = coeff == 1.0f ? total : coeff * total;
    }
    __syncthreads();  // partial[0] read before the next row's sums overwrite it
  }
}

__global__ void reduce_rows_backward_kernel(std::size_t n, std::size_t row_size,
                                            ops::ReductionGradient gradient, float coeff,
                                            const float* x, const float* dy, float* dx) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    dx[j] = gradient(x[j], dy[j / row_size] * coeff);
  }
}

__global__ void subtract_row_values_kernel(std::size_t n, std::size_t row_size, const float* in,
                                           const float* row_values, float* out) {
  const ops::Add add;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    out[j] = add(in[j], -row_values[j / row_size]);
  }
}

__global__ void divide_by_row_values_kernel(std::size_t n, std::size_t row_size,
                                            const float* row_values, float* y) {
  const ops::Divide divide;
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    y[j] = divide(y[j], row_values[j / row_size]);
  }
}

__global__ void mvn_backward_kernel(std::size_t n, std::size_t row_size, ops::MvnGradient gradient,
                                    const float* dy, const float* y, const float* dy_sums,
                                    const float* dy_y_sums, const float* stddev, float* dx) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    const std::size_t r = j / row_size;
    dx[j] = gradient(dy[j], y[j], dy_sums[r], dy_y_sums[r], stddev[r]);
  }
}

// One thread per search: top_k selection passes, each taking the best pair
// ranked after the previous pick (pairs are distinct: their indices differ).
__global__ void argmax_kernel(std::size_t searches, std::size_t candidates, std::size_t stride,
                              int top_k, bool with_axis, bool out_max_val, const float* x,
                              float* y) {
  const std::size_t k = static_cast<std::size_t>(top_k);
  for (std::size_t s = grid_start(); s < searches; s += grid_stride()) {
    const std::size_t outer = s / stride;
    const std::size_t inner = s % stride;
    const float* line = x + outer * candidates * stride + inner;
    float previous_value = 0;
    int previous_index = -1;
    for (std::size_t j = 0; j < k; ++j) {
      float best_value = 0;
      int best_index = -1;
      for (std::size_t c = 0; c < candidates; ++c) {
        const float value = line[c * stride];
        const int index = static_cast<int>(c);
        if (previous_index >= 0 &&
            !ops::argmax_ranks_before(previous_value, previous_index, value, index)) {
          continue;  // already taken, or ranked before the previous pick
        }
        if (best_index < 0 || ops::argmax_ranks_before(value, index, best_value, best_index)) {
          best_value = value;
          best_index = index;
        }
      }
      previous_value = best_value;
      previous_index = best_index;
      const float index = static_cast<float>(best_index);
      if (with_axis) {
        y[(outer * k + j) * stride + inner] = out_max_val ? best_value : index;
      } else if (out_max_val) {
        y[2 * s * k + j] = index;
        y[2 * s * k + k + j] = best_value;
      } else {
        y[s * k + j] = index;
      }
    }
  }
}

}  // namespace

void reduce_rows(const float* x, std::size_t rows, std::size_t row_size, ops::ReductionKind kind,
                 float coeff, float* y) {
  if (rows == 0) return;
  reduce_rows_kernel<<<ops::row_blocks(rows), kThreadsPerBlock, 0, stream()>>>(
      rows, row_size, ops::ReductionTerm{kind}, coeff, x, y);
  check_launch();
}

void reduce_rows_backward(const float* x, const float* dy, std::size_t rows, std::size_t row_size,
                          ops::ReductionKind kind, float coeff, float* dx) {
  const std::size_t n = rows * row_size;
  launch_for(n, stream(), reduce_rows_backward_kernel, n, row_size, ops::ReductionGradient{kind},
             coeff, x, dy, dx);
}

void mvn_subtract_row_values(const float* in, const float* row_values, float* out, std::size_t rows,
                             std::size_t row_size) {
  const std::size_t n = rows * row_size;
  launch_for(n, stream(), subtract_row_values_kernel, n, row_size, in, row_values, out);
}

void mvn_square(const float* in, float* out, std::size_t n) {
  apply(n, stream(), ops::MvnSquare{}, out, in);
}

void mvn_stddev(float* variance, std::size_t rows, float eps) {
  apply(rows, stream(), ops::MvnStddev{eps}, variance, static_cast<const float*>(variance));
}

void mvn_divide_by_row_values(float* y, const float* row_values, std::size_t rows,
                              std::size_t row_size) {
  const std::size_t n = rows * row_size;
  launch_for(n, stream(), divide_by_row_values_kernel, n, row_size, row_values, y);
}

void mvn_backward(const float* dy, const float* y, const float* dy_sums, const float* dy_y_sums,
                  const float* stddev, float* dx, std::size_t rows, std::size_t row_size,
                  float minus_inverse_size) {
  const std::size_t n = rows * row_size;
  launch_for(n, stream(), mvn_backward_kernel, n, row_size, ops::MvnGradient{minus_inverse_size},
             dy, y, dy_sums, dy_y_sums, stddev, dx);
}

void argmax(const float* x, float* y, std::size_t searches, std::size_t candidates,
            std::size_t stride, int top_k, bool with_axis, bool out_max_val) {
  if (searches == 0 || candidates == 0 || top_k <= 0) return;
  argmax_kernel<<<blocks_for(searches), kThreadsPerBlock, 0, stream()>>>(
      searches, candidates, stride, top_k, with_axis, out_max_val, x, y);
  check_launch();
}

}  // namespace xtrain::cuda

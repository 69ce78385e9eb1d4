// The Eltwise layer's kernels: the functors of src/layers/eltwise_ops.hpp over
// kernel_launch.cuh's grid-stride loop, plus the two-output MAX sweeps.
#include "cuda/cuda_context.hpp"
#include "layers/eltwise_kernels.hpp"
#include "cuda/kernel_launch.cuh"
#include "layers/eltwise_ops.hpp"

namespace xtrain::cuda {
namespace {

__global__ void max_first_kernel(std::size_t n, const float* a, const float* b, float* out,
                                 int* winner) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    // "a > b": the same test as eltwise_max_takes(a, b); a tie goes to b.
    const bool first_wins = ops::eltwise_max_takes(a[j], b[j]);
    out[j] = first_wins ? a[j] : b[j];
    winner[j] = first_wins ? 0 : 1;
  }
}

__global__ void max_next_kernel(std::size_t n, const float* x, int k, float* out, int* winner) {
  for (std::size_t j = grid_start(); j < n; j += grid_stride()) {
    if (ops::eltwise_max_takes(x[j], out[j])) {
      out[j] = x[j];
      winner[j] = k;
    }
  }
}

}  // namespace

void eltwise_sum_first(const float* x, float coefficient, float* out, std::size_t n) {
  apply(n, stream(), ops::EltwiseSumFirst{coefficient}, out, x);
}

void eltwise_sum_next(const float* x, float coefficient, float* out, std::size_t n) {
  apply(n, stream(), ops::EltwiseSumNext{coefficient}, out, static_cast<const float*>(out), x);
}

void eltwise_prod_gradient_from_top(const float* y, const float* x, const float* dy, float* dx,
                                    std::size_t n) {
  apply(n, stream(), ops::EltwiseProdGradientFromTop{}, dx, y, x, dy);
}

void eltwise_max_first(const float* a, const float* b, float* out, int* winner, std::size_t n) {
  launch_for(n, stream(), max_first_kernel, n, a, b, out, winner);
}

void eltwise_max_next(const float* x, int k, float* out, int* winner, std::size_t n) {
  launch_for(n, stream(), max_next_kernel, n, x, k, out, winner);
}

void eltwise_max_backward(const int* winner, const float* dy, int k, float* dx, std::size_t n) {
  apply(n, stream(), ops::EltwiseMaxGradient{k}, dx, winner, dy);
}

}  // namespace xtrain::cuda

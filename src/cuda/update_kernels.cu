// The solver functors in grid-stride kernels (see update_kernels.hpp): the
// single-output ones through kernel_launch.cuh's apply, the multi-array steps
// through for_each_kernel.
#include "cuda/cuda_context.hpp"
#include "cuda/kernel_launch.cuh"
#include "cuda/update_kernels.hpp"

namespace xtrain::cuda {
namespace {

// op(arrays[i]...) for every i: the multi-array update steps.
template <typename Op, typename... Arrays>
__global__ void for_each_kernel(std::size_t n, Op op, Arrays*... arrays) {
  for (std::size_t i = grid_start(); i < n; i += grid_stride()) op(arrays[i]...);
}

template <typename Op, typename... Inputs>
void launch_apply(std::size_t n, const Op& op, float* out, const Inputs*... in) {
  cuda::apply(n, stream(), op, out, in...);
}

template <typename Op, typename... Arrays>
void launch_for_each(std::size_t n, const Op& op, Arrays*... arrays) {
  if (n == 0) return;
  for_each_kernel<<<blocks_for(n), kThreadsPerBlock, 0, stream()>>>(n, op, arrays...);
  check_launch();
}

}  // namespace

void apply(std::size_t n, const ops::AddScaled& op, float* out, const float* x, const float* y) {
  launch_apply(n, op, out, x, y);
}
void apply(std::size_t n, const ops::AddScaledSign& op, float* out, const float* x,
           const float* y) {
  launch_apply(n, op, out, x, y);
}
void apply(std::size_t n, const ops::ScaleBy& op, float* out, const float* x) {
  launch_apply(n, op, out, x);
}
void apply(std::size_t n, const ops::Difference& op, float* out, const float* a, const float* b) {
  launch_apply(n, op, out, a, b);
}

void for_each(std::size_t n, const ops::MomentumStep& op, float* diff, float* velocity) {
  launch_for_each(n, op, diff, velocity);
}
void for_each(std::size_t n, const ops::NesterovStep& op, float* diff, float* velocity) {
  launch_for_each(n, op, diff, velocity);
}
void for_each(std::size_t n, const ops::AdaGradStep& op, float* diff, float* squares) {
  launch_for_each(n, op, diff, squares);
}
void for_each(std::size_t n, const ops::RMSPropStep& op, float* diff, float* mean_square) {
  launch_for_each(n, op, diff, mean_square);
}
void for_each(std::size_t n, const ops::AdamStep& op, float* diff, float* first_moment,
              float* second_moment) {
  launch_for_each(n, op, diff, first_moment, second_moment);
}
void for_each(std::size_t n, const ops::AdaDeltaStep& op, float* diff, float* gradient_squares,
              float* update_squares) {
  launch_for_each(n, op, diff, gradient_squares, update_squares);
}

}  // namespace xtrain::cuda

// The CUDA side of src/core/elementwise_ops.hpp: the grid-stride kernel of
// kernel_launch.cuh applies the shared functors, so each launcher below is a
// single line, plus the per-position softmax kernels (one thread walks the
// channels of one (outer, inner) position).
#include "core/elementwise_ops.hpp"
#include "core/reduction_terms.hpp"
#include "cuda/cuda_context.hpp"
#include "layers/elementwise_kernels.hpp"
#include "cuda/grid_reduction.cuh"
#include "cuda/kernel_launch.cuh"

namespace xtrain::cuda {
namespace {

// A launcher's stream argument: nullptr (the default) means this thread's.
cudaStream_t on_thread_stream(cudaStream_t stream) { return stream ? stream : cuda::stream(); }

__global__ void softmax_forward_kernel(const float* x, float* y, std::size_t outer,
                                       std::size_t channels, std::size_t inner) {
  const std::size_t positions = outer * inner;
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < positions; p += stride) {
    const std::size_t offset = (p / inner) * channels * inner + p % inner;
    const float* in = x + offset;
    float* out = y + offset;
    float max_value = in[0];
    for (std::size_t c = 1; c < channels; ++c) max_value = fmaxf(max_value, in[c * inner]);
    float sum = 0;
    for (std::size_t c = 0; c < channels; ++c) {
      const float e = expf(in[c * inner] - max_value);
      out[c * inner] = e;
      sum += e;
    }
    for (std::size_t c = 0; c < channels; ++c) out[c * inner] /= sum;
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx,
                                        std::size_t outer, std::size_t channels,
                                        std::size_t inner) {
  const std::size_t positions = outer * inner;
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       p < positions; p += stride) {
    const std::size_t offset = (p / inner) * channels * inner + p % inner;
    float dot = 0;
    for (std::size_t c = 0; c < channels; ++c) {
      dot += dy[offset + c * inner] * y[offset + c * inner];
    }
    for (std::size_t c = 0; c < channels; ++c) {
      const std::size_t i = offset + c * inner;
      dx[i] = (dy[i] - dot) * y[i];
    }
  }
}

}  // namespace

void relu_forward(const float* x, float* y, std::size_t n, float negative_slope,
                  cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::ReluForward{negative_slope}, y, x);
}

void relu_backward(const float* x, const float* dy, float* dx, std::size_t n, float negative_slope,
                   cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::ReluBackward{negative_slope}, dx, x, dy);
}

void sigmoid_forward(const float* x, float* y, std::size_t n, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::SigmoidForward{}, y, x);
}

void dropout_forward(const float* x, const unsigned* mask, float* y, std::size_t n, float scale,
                     cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::DropoutForward{scale}, y, x, mask);
}

void dropout_backward(const float* dy, const unsigned* mask, float* dx, std::size_t n, float scale,
                      cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::DropoutBackward{scale}, dx, dy, mask);
}

void add(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::Add{}, out, a, b);
}

void subtract(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::Difference{}, out, a, b);
}

void multiply(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::Multiply{}, out, a, b);
}

void scale_values(const float* x, float scale, float* out, std::size_t n, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::ScaleBy{scale}, out, x);
}

void softmax_forward(const float* x, float* y, std::size_t outer, std::size_t channels,
                     std::size_t inner, cudaStream_t stream) {
  const std::size_t positions = outer * inner;
  if (positions == 0 || channels == 0) return;
  softmax_forward_kernel<<<blocks_for(positions), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      x, y, outer, channels, inner);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer,
                      std::size_t channels, std::size_t inner, cudaStream_t stream) {
  const std::size_t positions = outer * inner;
  if (positions == 0 || channels == 0) return;
  softmax_backward_kernel<<<blocks_for(positions), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      y, dy, dx, outer, channels, inner);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

// --- The model zoo's neuron layers -------------------------------------------

void power_forward(const float* x, float* y, std::size_t n, float power, float scale, float shift,
                   cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::PowerForward{power, scale, shift}, y, x);
}

void power_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n,
                    float power, float scale, float shift, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::PowerBackward{power, scale, shift}, dx, x, y, dy);
}

void threshold_forward(const float* x, float* y, std::size_t n, float threshold,
                       cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::ThresholdForward{threshold}, y, x);
}

void elu_forward(const float* x, float* y, std::size_t n, float alpha, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::EluForward{alpha}, y, x);
}

void elu_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n,
                  float alpha, cudaStream_t stream) {
  apply(n, on_thread_stream(stream), ops::EluBackward{alpha}, dx, x, y, dy);
}

namespace {

// Element i of an (outer, channels, inner) array has channel (i / inner) % channels.
__device__ std::size_t prelu_slope_index(std::size_t i, std::size_t channels, std::size_t inner,
                                         std::size_t channels_per_slope) {
  return (i / inner) % channels / channels_per_slope;
}

__global__ void prelu_forward_kernel(std::size_t n, std::size_t channels, std::size_t inner,
                                     std::size_t channels_per_slope, const float* x,
                                     const float* slope, float* y) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] =
        ops::PReluForward{}(x[i], slope[prelu_slope_index(i, channels, inner, channels_per_slope)]);
  }
}

__global__ void prelu_backward_kernel(std::size_t n, std::size_t channels, std::size_t inner,
                                      std::size_t channels_per_slope, const float* x,
                                      const float* slope, const float* dy, float* dx) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dx[i] = ops::PReluBackward{}(
        x[i], slope[prelu_slope_index(i, channels, inner, channels_per_slope)], dy[i]);
  }
}

// slope_diff[s] += the slope's total (summed in double by grid_reduction.cuh).
struct AddToSlopeDiff {
  float* slope_diff;
  __device__ void operator()(std::size_t slope, double total) const {
    slope_diff[slope] += static_cast<float>(total);
  }
};

}  // namespace

void prelu_forward(const float* x, const float* slope, float* y, std::size_t outer,
                   std::size_t channels, std::size_t inner, std::size_t channels_per_slope,
                   cudaStream_t stream) {
  const std::size_t n = outer * channels * inner;
  if (n == 0) return;
  prelu_forward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      n, channels, inner, channels_per_slope, x, slope, y);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void prelu_backward(const float* x, const float* slope, const float* dy, float* dx,
                    std::size_t outer, std::size_t channels, std::size_t inner,
                    std::size_t channels_per_slope, cudaStream_t stream) {
  const std::size_t n = outer * channels * inner;
  if (n == 0) return;
  prelu_backward_kernel<<<blocks_for(n), kThreadsPerBlock, 0, on_thread_stream(stream)>>>(
      n, channels, inner, channels_per_slope, x, slope, dy, dx);
  XTRAIN_CUDA_CHECK(cudaGetLastError());
}

void prelu_slope_gradient(const float* x, const float* dy, float* slope_diff, std::size_t outer,
                          std::size_t channels, std::size_t inner, std::size_t channels_per_slope,
                          cudaStream_t stream) {
  const std::size_t slopes = channels / channels_per_slope;
  if (slopes == 0 || outer * inner == 0) return;
  // Slope s's elements are a run of channels_per_slope * inner values in each
  // outer index: the (outer, slopes, run) array's per-channel sums.
  reduce_per_channel(reduction::ChannelTiling::plan(outer, slopes, channels_per_slope * inner),
                     reduction::SingleSweep<reduction::PReluSlopeSumOf>{{x, dy}},
                     AddToSlopeDiff{slope_diff}, on_thread_stream(stream));
}

}  // namespace xtrain::cuda

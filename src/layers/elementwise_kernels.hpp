// CUDA launchers for the elementwise layers (ReLU, Dropout, Split, the
// sigmoid of SigmoidCrossEntropyLoss) and the per-position Softmax. (Sigmoid,
// TanH, BNLL, AbsVal, Exp and Log run through cuda::apply:
// layers/elementwise_neuron_layer.hpp.) Each applies the functor of
// src/core/elementwise_ops.hpp that the CPU path also uses. All pointers are
// device pointers; `out` may alias an input. Each runs on `stream`, by default
// (nullptr) the calling thread's stream, cuda::stream() of
// src/cuda/cuda_context.hpp, never the legacy default stream. Compiled only in
// CUDA builds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace xtrain::cuda {

void relu_forward(const float* x, float* y, std::size_t n, float negative_slope,
                  cudaStream_t stream = nullptr);
// dx from the bottom data x (or, in place, the top data: same sign).
void relu_backward(const float* x, const float* dy, float* dx, std::size_t n, float negative_slope,
                   cudaStream_t stream = nullptr);

void sigmoid_forward(const float* x, float* y, std::size_t n, cudaStream_t stream = nullptr);

// y = x * mask * scale (forward) and dx = dy * mask * scale (backward).
void dropout_forward(const float* x, const unsigned* mask, float* y, std::size_t n, float scale,
                     cudaStream_t stream = nullptr);
void dropout_backward(const float* dy, const unsigned* mask, float* dx, std::size_t n, float scale,
                      cudaStream_t stream = nullptr);

// out = a + b
void add(const float* a, const float* b, float* out, std::size_t n, cudaStream_t stream = nullptr);
// out = a - b
void subtract(const float* a, const float* b, float* out, std::size_t n,
              cudaStream_t stream = nullptr);
// out = a * b
void multiply(const float* a, const float* b, float* out, std::size_t n,
              cudaStream_t stream = nullptr);
// out = scale * x
void scale_values(const float* x, float scale, float* out, std::size_t n,
                  cudaStream_t stream = nullptr);

// Softmax over the middle axis of an (outer, channels, inner) array.
void softmax_forward(const float* x, float* y, std::size_t outer, std::size_t channels,
                     std::size_t inner, cudaStream_t stream = nullptr);
// dx = (dy - sum_c dy * y) * y
void softmax_backward(const float* y, const float* dy, float* dx, std::size_t outer,
                      std::size_t channels, std::size_t inner, cudaStream_t stream = nullptr);

// The model zoo's neuron layers (functors in src/core/elementwise_ops.hpp).
// x: bottom data, y: top data, dy: top diff, dx: bottom diff.
void power_forward(const float* x, float* y, std::size_t n, float power, float scale, float shift,
                   cudaStream_t stream = nullptr);
void power_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n,
                    float power, float scale, float shift, cudaStream_t stream = nullptr);
void threshold_forward(const float* x, float* y, std::size_t n, float threshold,
                       cudaStream_t stream = nullptr);
void elu_forward(const float* x, float* y, std::size_t n, float alpha,
                 cudaStream_t stream = nullptr);
void elu_backward(const float* x, const float* y, const float* dy, float* dx, std::size_t n,
                  float alpha, cudaStream_t stream = nullptr);

// PReLU over an (outer, channels, inner) array; slope index c / channels_per_slope
// (1, or `channels` when one slope is shared by all channels).
void prelu_forward(const float* x, const float* slope, float* y, std::size_t outer,
                   std::size_t channels, std::size_t inner, std::size_t channels_per_slope,
                   cudaStream_t stream = nullptr);
void prelu_backward(const float* x, const float* slope, const float* dy, float* dx,
                    std::size_t outer, std::size_t channels, std::size_t inner,
                    std::size_t channels_per_slope, cudaStream_t stream = nullptr);
// slope_diff[s] += sum of dy x [x <= 0] over the elements of slope s.
void prelu_slope_gradient(const float* x, const float* dy, float* slope_diff, std::size_t outer,
                          std::size_t channels, std::size_t inner, std::size_t channels_per_slope,
                          cudaStream_t stream = nullptr);

}  // namespace xtrain::cuda

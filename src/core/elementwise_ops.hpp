// The elementwise operations of the activation layers, each defined once as a
// small functor that both the CPU loops and the CUDA kernels apply, so the two
// devices cannot drift apart.
//
//   ReluForward{s}(x)         = x > 0 ? x : s * x
//   ReluBackward{s}(x, dy)    = dy * ([x > 0] + s * [x <= 0])
//   SigmoidForward(x)         = 1 / (1 + e^-x), computed as 0.5 * tanh(x / 2) + 0.5
//   SigmoidBackward(y, dy)    = dy * y * (1 - y)             (from the output y)
//   TanhForward(x)            = tanh(x)
//   TanhBackward(y, dy)       = dy * (1 - y^2)               (from the output y)
//   DropoutForward{k}(x, m)   = x * m * k                    (m in {0, 1}, k = 1 / (1 - ratio))
//   DropoutBackward{k}(dy, m) = dy * m * k
//   Add(a, b)                 = a + b
//
// The backward functors of Sigmoid and TanH read the output, and ReLU's reads
// a value whose sign is that of the input, so all of them work in place.
#pragma once

#include <cmath>
#include <cstddef>

#ifdef __CUDACC__
#define XTRAIN_HOST_DEVICE __host__ __device__
#else
#define XTRAIN_HOST_DEVICE
#endif

namespace xtrain::ops {

struct ReluForward {
  float negative_slope;
  XTRAIN_HOST_DEVICE float operator()(float x) const { return x > 0 ? x : negative_slope * x; }
};

struct ReluBackward {
  float negative_slope;
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    return dy * (static_cast<float>(x > 0) + negative_slope * static_cast<float>(x <= 0));
  }
};

struct SigmoidForward {
  // The tanh form never overflows exp() for large |x| and is what Caffe
  // computes, so trained nets see the same bits.
  XTRAIN_HOST_DEVICE float operator()(float x) const { return 0.5f * tanhf(0.5f * x) + 0.5f; }
};

struct SigmoidBackward {
  XTRAIN_HOST_DEVICE float operator()(float y, float dy) const { return dy * y * (1.0f - y); }
};

struct TanhForward {
  XTRAIN_HOST_DEVICE float operator()(float x) const { return tanhf(x); }
};

struct TanhBackward {
  XTRAIN_HOST_DEVICE float operator()(float y, float dy) const { return dy * (1.0f - y * y); }
};

struct DropoutForward {
  float scale;
  XTRAIN_HOST_DEVICE float operator()(float x, unsigned mask) const {
    return x * static_cast<float>(mask) * scale;
  }
};

struct DropoutBackward {
  float scale;
  XTRAIN_HOST_DEVICE float operator()(float dy, unsigned mask) const {
    return dy * static_cast<float>(mask) * scale;
  }
};

struct Add {
  XTRAIN_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};

// out[i] = op(in[i]...) for i in [0, n): the CPU counterpart of the CUDA
// grid-stride kernel. `out` may alias an input (in-place layers).
template <typename Op, typename... Inputs>
inline void apply_cpu(std::size_t n, Op op, float* out, const Inputs*... in) {
  for (std::size_t i = 0; i < n; ++i) out[i] = op(in[i]...);
}

}  // namespace xtrain::ops

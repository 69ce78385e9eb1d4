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
//   Difference(a, b)          = a - b
//   Multiply(a, b)            = a * b
//   ScaleBy{s}(x)             = s * x
//
// The backward functors of Sigmoid and TanH read the output, and ReLU's reads
// a value whose sign is that of the input, so all of them work in place.
#pragma once

#include <cmath>
#include <cstddef>

#ifndef __CUDACC__
#include "core/parallel_loop.hpp"
#endif

#include "core/host_device.hpp"

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

// General arithmetic the layers combine: a - b, a * b, s * x.
struct Difference {  // also Blob::update: data - diff
  XTRAIN_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
};

struct Multiply {
  XTRAIN_HOST_DEVICE float operator()(float a, float b) const { return a * b; }
};

struct ScaleBy {
  float scale;
  XTRAIN_HOST_DEVICE float operator()(float x) const { return scale * x; }
};

#ifndef __CUDACC__  // host code; nvcc builds only the functors
// out[i] = op(in[i]...) for i in [0, n): the CPU counterpart of the CUDA
// grid-stride kernel, vectorised, and split across the CPU thread pool when n
// is large enough to pay for waking it.
// `out` may alias an input (in-place layers).
template <typename Op, typename... Inputs>
inline void apply_cpu(std::size_t n, Op op, float* out, const Inputs*... in) {
  const std::ptrdiff_t count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel if (n >= kMinParallelWork)
  {
    // Each thread's own copy of op: the shared one is reached through a
    // pointer, and a store to out[i] might then change its parameters as far
    // as the compiler knows, which keeps the loop scalar and branchy (ReLU
    // ran 16x slower on random signs).
    const Op local_op = op;
#pragma omp for schedule(static)
    for (std::ptrdiff_t i = 0; i < count; ++i) out[i] = local_op(in[i]...);
  }
}
#endif

// ---------------------------------------------------------------------------
// The neuron layers of the model zoo (AbsVal, Power, Exp, Log, BNLL,
// Threshold, ELU, PReLU). Each follows Caffe 1.0's order of float operations
// (a multiply by 1 or an add of 0 is skipped where Caffe skips it), so
// trained nets see the same values. With a = scale, b = shift, p = power:
//
//   AbsForward(x)                 = |x|
//   AbsBackward(x, dy)            = sign(x) * dy                      (sign(0) = 0)
//   PowerForward{p,a,b}(x)        = (a x + b)^p;  1 if p = 0, b^p if a = 0
//   PowerBackward{p,a,b}(x,y,dy)  = dy * p a (a x + b)^(p - 1), computed from y as
//                                   Caffe does: p a (p = 1; 0 when p a = 0),
//                                   2a^2 x + 2ab (p = 2), p y / x (b = 0), else
//                                   p a y / (a x + b)
//   ExpForward{k,c}(x)            = c e^(k x)       (k = a ln(base), c = base^b)
//   ExpBackward{k}(y, dy)         = y dy k
//   LogForward{a,b,m}(x)          = m ln(a x + b)   (m = 1 / ln(base))
//   LogBackward{a,b,n}(x, dy)     = (a x + b)^-1 n dy  (n = a / ln(base))
//   BnllForward(x)                = ln(1 + e^x), as x + ln(1 + e^-x) for x > 0
//   BnllBackward(x, dy)           = dy e / (e + 1),  e = e^min(x, 50)
//   ThresholdForward{t}(x)        = x > t ? 1 : 0
//   EluForward{alpha}(x)          = max(x, 0) + alpha (e^min(x, 0) - 1)
//   EluBackward{alpha}(x, y, dy)  = dy ([x > 0] + (alpha + y) [x <= 0])
//   PReluForward(x, s)            = max(x, 0) + s min(x, 0)
//   PReluBackward(x, s, dy)       = dy ([x > 0] + s [x <= 0])
//   PReluSlopeGradient(x, dy)     = dy x [x <= 0]

// std::max(x, 0) and std::min(x, 0), NaN handling included, on both devices.
XTRAIN_HOST_DEVICE inline float max_with_zero(float x) { return x < 0.0f ? 0.0f : x; }
XTRAIN_HOST_DEVICE inline float min_with_zero(float x) { return 0.0f < x ? 0.0f : x; }

struct AbsForward {
  XTRAIN_HOST_DEVICE float operator()(float x) const { return fabsf(x); }
};

struct AbsBackward {
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    return static_cast<float>((0.0f < x) - (x < 0.0f)) * dy;
  }
};

struct PowerForward {
  float power, scale, shift;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    // p a = 0: a constant, whatever x is (even inf or NaN).
    if (power * scale == 0.0f) return power == 0.0f ? 1.0f : powf(shift, power);
    float v = x;
    if (scale != 1.0f) v *= scale;
    if (shift != 0.0f) v += shift;
    return power == 1.0f ? v : powf(v, power);
  }
};

struct PowerBackward {
  float power, scale, shift;
  XTRAIN_HOST_DEVICE float operator()(float x, float y, float dy) const {
    const float diff_scale = power * scale;
    if (diff_scale == 0.0f) return 0.0f;
    float dy_dx;
    if (power == 1.0f) {
      dy_dx = diff_scale;
    } else if (power == 2.0f) {
      dy_dx = diff_scale * scale * x;
      if (shift != 0.0f) dy_dx += diff_scale * shift;
    } else if (shift == 0.0f) {
      dy_dx = y / x * power;
    } else {
      float v = x;
      if (scale != 1.0f) v *= scale;
      dy_dx = y / (v + shift);
      if (diff_scale != 1.0f) dy_dx *= diff_scale;
    }
    return dy * dy_dx;
  }
};

struct ExpForward {
  float inner_scale, outer_scale;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    const float e = expf(inner_scale == 1.0f ? x : inner_scale * x);
    return outer_scale == 1.0f ? e : e * outer_scale;
  }
};

struct ExpBackward {
  float inner_scale;
  XTRAIN_HOST_DEVICE float operator()(float y, float dy) const {
    const float dx = y * dy;
    return inner_scale == 1.0f ? dx : dx * inner_scale;
  }
};

struct LogForward {
  float scale, shift, base_scale;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    float v = x;
    if (scale != 1.0f) v *= scale;
    if (shift != 0.0f) v += shift;
    const float log_v = logf(v);
    return base_scale == 1.0f ? log_v : log_v * base_scale;
  }
};

struct LogBackward {
  float scale, shift, backward_scale;
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    float v = x;
    if (scale != 1.0f) v *= scale;
    if (shift != 0.0f) v += shift;
    v = powf(v, -1.0f);
    if (backward_scale != 1.0f) v *= backward_scale;
    return dy * v;
  }
};

struct BnllForward {
  // Caffe mixes in double here (the literal 1.); so do we, for the same bits.
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    return static_cast<float>(x > 0.0f ? x + log(1.0 + exp(static_cast<double>(-x)))
                                       : log(1.0 + exp(static_cast<double>(x))));
  }
};

struct BnllBackward {
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    const float e = expf(x < 50.0f ? x : 50.0f);  // e^50 / (e^50 + 1) is 1 in float
    return static_cast<float>(static_cast<double>(dy * e) / (static_cast<double>(e) + 1.0));
  }
};

struct ThresholdForward {
  float threshold;
  XTRAIN_HOST_DEVICE float operator()(float x) const { return x > threshold ? 1.0f : 0.0f; }
};

struct EluForward {
  float alpha;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    return max_with_zero(x) + alpha * (expf(min_with_zero(x)) - 1.0f);
  }
};

struct EluBackward {
  float alpha;
  XTRAIN_HOST_DEVICE float operator()(float x, float y, float dy) const {
    return dy * (static_cast<float>(x > 0.0f) + (alpha + y) * static_cast<float>(x <= 0.0f));
  }
};

struct PReluForward {
  XTRAIN_HOST_DEVICE float operator()(float x, float slope) const {
    return max_with_zero(x) + slope * min_with_zero(x);
  }
};

struct PReluBackward {
  XTRAIN_HOST_DEVICE float operator()(float x, float slope, float dy) const {
    return dy * (static_cast<float>(x > 0.0f) + slope * static_cast<float>(x <= 0.0f));
  }
};

struct PReluSlopeGradient {
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    return dy * x * static_cast<float>(x <= 0.0f);
  }
};

// ---------------------------------------------------------------------------
// Clip and Swish (Caffe master's newer neuron layers):
//
//   ClipForward{lo,hi}(x)         = max(lo, min(x, hi))
//   ClipBackward{lo,hi}(x, dy)    = dy * [lo <= x <= hi]     (the bounds pass the gradient)
//   SwishSigmoid{beta}(x)         = sigmoid(beta x)          (kept for backward)
//   SwishBackward{beta}(y, s, dy) = dy (beta y + s (1 - beta y)),  y = x s
//
// ClipForward follows Caffe's CPU std::max(lo, std::min(x, hi)) (a NaN input
// gives lo); SwishBackward computes in double as Caffe's CPU loop does (its
// literal 1.), so trained nets see the same bits.

struct ClipForward {
  float low, high;
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    const float below_high = high < x ? high : x;
    return low < below_high ? below_high : low;
  }
};

struct ClipBackward {
  float low, high;
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    return dy * static_cast<float>(x >= low && x <= high);
  }
};

struct SwishSigmoid {
  float beta;
  XTRAIN_HOST_DEVICE float operator()(float x) const { return SigmoidForward{}(beta * x); }
};

struct SwishBackward {
  float beta;
  XTRAIN_HOST_DEVICE float operator()(float y, float s, float dy) const {
    const float beta_y = beta * y;
    return static_cast<float>(dy * (beta_y + s * (1.0 - beta_y)));
  }
};

// ---------------------------------------------------------------------------
// GELU (xtrain's, beyond Caffe's layers; Hendrycks and Gimpel, 2016), the
// exact form PyTorch's nn.GELU() computes, with Phi the standard normal CDF
// and phi its density:
//
//   GeluForward(x)      = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
//   GeluBackward(x, dy) = dy (Phi(x) + x phi(x)),  phi(x) = e^(-x^2 / 2) / sqrt(2 pi)

struct GeluForward {
  XTRAIN_HOST_DEVICE float operator()(float x) const {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  }
};

struct GeluBackward {
  XTRAIN_HOST_DEVICE float operator()(float x, float dy) const {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    const float density = 0.39894228040143268f * expf(-0.5f * x * x);
    return dy * (cdf + x * density);
  }
};

}  // namespace xtrain::ops

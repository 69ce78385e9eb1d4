// The per-value math of the Scale layer, shared by its CPU loops and its CUDA
// kernel (src/layers/broadcast_kernels.cu). With s = scale[d], b = bias[d] (0
// without bias_term):
//   ScaleShift(x, s, b) = x s + b
//   dx = Multiply(dy, s)  (src/core/elementwise_ops.hpp)
// The Bias layer's forward is Add(x, b), its backward a copy.
#pragma once

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

struct ScaleShift {
  XTRAIN_HOST_DEVICE float operator()(float x, float factor, float shift) const {
    return x * factor + shift;
  }
};

}  // namespace xtrain::ops

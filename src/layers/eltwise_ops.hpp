// The per-value math of the Eltwise layer, shared by its CPU loops and its
// CUDA kernels (src/layers/eltwise_kernels.cu). In Caffe's sweep order:
//
//   SUM:  EltwiseSumFirst{c0}(x0)        = 0 + c0 x0   (the 0 + keeps Caffe's +0 for -0)
//         EltwiseSumNext{ck}(acc, xk)    = acc + ck xk
//         backward: ScaleBy{ck}(dy)      (src/core/elementwise_ops.hpp)
//   PROD: Multiply (src/core/elementwise_ops.hpp) forward and, for the stable
//         gradient, dx_k = dy * prod_{j != k} x_j
//         EltwiseProdGradientFromTop(y, xk, dy) = y / xk * dy   (the unstable one)
//   MAX:  eltwise_max_takes(x, current)  = x > current: bottom 1 wins a tie with
//         bottom 0, and a later bottom wins only if strictly greater
//         EltwiseMaxGradient{k}(winner, dy) = winner == k ? dy : 0
#pragma once

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

struct EltwiseSumFirst {
  float coefficient;
  XTRAIN_HOST_DEVICE float operator()(float x) const { return 0.0f + coefficient * x; }
};

struct EltwiseSumNext {
  float coefficient;
  XTRAIN_HOST_DEVICE float operator()(float sum, float x) const { return sum + coefficient * x; }
};

struct EltwiseProdGradientFromTop {
  XTRAIN_HOST_DEVICE float operator()(float y, float x, float dy) const { return y / x * dy; }
};

XTRAIN_HOST_DEVICE inline bool eltwise_max_takes(float candidate, float current) {
  return candidate > current;
}

struct EltwiseMaxGradient {
  int self;
  XTRAIN_HOST_DEVICE float operator()(int winner, float dy) const {
    return winner == self ? dy : 0.0f;
  }
};

}  // namespace xtrain::ops

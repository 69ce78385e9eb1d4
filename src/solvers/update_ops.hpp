// The elementwise steps of the solvers' updates, as functors for
// ops::apply_cpu (and, on the GPU, the same functors in a CUDA kernel).
//
// Each step is one parallel, vectorised pass instead of a chain of BLAS
// level-1 calls (OpenBLAS wakes its threads for each, which cost LeNet ~0.8
// ms per iteration). The float operations are Caffe's, in Caffe's order,
// with separate multiply and add (no fused multiply-add).
#pragma once

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

// y + alpha * x: L2 weight decay (diff + decay * weight), Caffe's axpy.
struct AddScaled {
  float alpha;
  XTRAIN_HOST_DEVICE float operator()(float x, float y) const { return alpha * x + y; }
};

// The momentum step's velocity, Caffe's axpby(rate, diff, momentum, v):
// v scaled by momentum first, then rate * diff added.
struct MomentumVelocity {
  float rate;
  float momentum;
  XTRAIN_HOST_DEVICE float operator()(float diff, float velocity) const {
    return rate * diff + momentum * velocity;
  }
};

// data - diff: Blob::update, the step every solver ends with.
struct Subtract {
  XTRAIN_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
};

}  // namespace xtrain::ops

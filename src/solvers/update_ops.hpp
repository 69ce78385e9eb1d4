// The elementwise steps of the solvers' updates, as functors that the CPU
// loops (ops::apply_cpu, ops::for_each_cpu) and the CUDA kernels
// (src/solvers/update_kernels.cu) both apply, through core/device_apply.hpp.
// The apply-form functors return one output from inputs; the step functors
// update several arrays of one parameter in place, element by element.
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

// y + alpha * sign(x): L1 weight decay (sign(0) = 0, as in Caffe).
struct AddScaledSign {
  float alpha;
  XTRAIN_HOST_DEVICE float operator()(float x, float y) const {
    return y + alpha * static_cast<float>((x > 0) - (x < 0));
  }
};

// Also used by the solvers, from core/elementwise_ops.hpp: ScaleBy (the
// mean over iter_size passes, gradient clipping) and Difference (data - diff,
// Blob::update, the step every solver ends with).

// The update rules, one element at a time; `diff` ends as the step that
// Blob::update subtracts. Each is Caffe's sequence of float operations.

// SGD with momentum: v = rate * diff + momentum * v; diff = v.
struct MomentumStep {
  float rate;
  float momentum;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& velocity) const {
    velocity = MomentumVelocity{rate, momentum}(diff, velocity);
    diff = velocity;
  }
};

// Nesterov: v' = rate * diff + momentum * v; diff = (1 + momentum) v' - momentum v.
struct NesterovStep {
  float rate;
  float momentum;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& velocity) const {
    const float previous = velocity;
    velocity = rate * diff + momentum * previous;
    diff = (1 + momentum) * velocity - momentum * previous;
  }
};

// AdaGrad: h += diff^2; diff = rate * diff / (sqrt(h) + delta).
struct AdaGradStep {
  float rate;
  float delta;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& squares) const {
    squares += diff * diff;
    diff = rate * (diff / (sqrtf(squares) + delta));
  }
};

// RMSProp: h = (1 - decay) diff^2 + decay h; diff = rate * diff / (sqrt(h) + delta).
struct RMSPropStep {
  float rate;
  float delta;
  float decay;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& mean_square) const {
    mean_square = (1 - decay) * (diff * diff) + decay * mean_square;
    diff = rate * (diff / (sqrtf(mean_square) + delta));
  }
};

// Adam: m = (1 - b1) diff + b1 m; v = (1 - b2) diff^2 + b2 v;
// diff = step * m / (sqrt(v) + eps), step holding the bias correction.
struct AdamStep {
  float step;
  float beta1;
  float beta2;
  float eps;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& first_moment, float& second_moment) const {
    first_moment = (1 - beta1) * diff + beta1 * first_moment;
    second_moment = (1 - beta2) * (diff * diff) + beta2 * second_moment;
    diff = step * (first_moment / (sqrtf(second_moment) + eps));
  }
};

// AdaDelta: g = (1 - rho) diff^2 + rho g; u = diff sqrt((delta + s) / (delta + g));
// s = (1 - rho) u^2 + rho s; diff = rate * u.
struct AdaDeltaStep {
  float rate;
  float delta;
  float rho;
  XTRAIN_HOST_DEVICE void operator()(float& diff, float& gradient_squares,
                                     float& update_squares) const {
    gradient_squares = (1 - rho) * (diff * diff) + rho * gradient_squares;
    const float update = diff * sqrtf((delta + update_squares) / (delta + gradient_squares));
    update_squares = (1 - rho) * (update * update) + rho * update_squares;
    diff = rate * update;
  }
};

}  // namespace xtrain::ops

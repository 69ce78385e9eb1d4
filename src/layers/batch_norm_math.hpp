// The per-value and per-channel arithmetic of the BatchNorm layer (see
// batch_norm_layer.cpp for Caffe's semantics), shared by its CPU loops and its
// CUDA kernels (cuda/batch_norm_gpu_kernels.cu), so the CPU tests check the
// formulas the GPU runs. Only the sums over a channel differ between the
// devices (their order of additions, both in double).
#pragma once

#include <cmath>

#include "core/host_device.hpp"

namespace xtrain::batch_norm {

// y = (x - mean) / sqrt(var + eps), with deviation = sqrt(var + eps).
XTRAIN_HOST_DEVICE inline float deviation(float variance, float eps) {
  return sqrtf(variance + eps);
}
XTRAIN_HOST_DEVICE inline float normalize(float x, float mean, float deviation) {
  return (x - mean) / deviation;
}

// Backward with batch statistics: dx = (dy - mean(dy) - y * mean(dy * y)) / deviation.
XTRAIN_HOST_DEVICE inline float batch_gradient(float dy, float y, float dy_mean,
                                               float dy_dot_y_mean, float deviation) {
  return (dy - dy_mean - y * dy_dot_y_mean) / deviation;
}
// Backward with the stored statistics (constants): dx = dy / deviation.
XTRAIN_HOST_DEVICE inline float global_gradient(float dy, float deviation) {
  return dy / deviation;
}

// With scale_bias (NVIDIA Caffe 0.17), per channel: out = scale * y + bias,
// with y the normalised value. Backward gives the parameters sum(dout * y)
// and sum(dout) and y the gradient dy = scale * dout, which, put into the
// two gradients above, factor out as dx = scale * gradient(dout, ...).
XTRAIN_HOST_DEVICE inline float scale_and_shift(float normalised, float scale, float bias) {
  return scale * normalised + bias;
}
XTRAIN_HOST_DEVICE inline float scaled_batch_gradient(float dout, float y, float dout_mean,
                                                      float dout_dot_y_mean, float deviation,
                                                      float scale) {
  return scale * batch_gradient(dout, y, dout_mean, dout_dot_y_mean, deviation);
}
XTRAIN_HOST_DEVICE inline float scaled_global_gradient(float dout, float deviation, float scale) {
  return scale * global_gradient(dout, deviation);
}

// The stored statistics are sums weighted by blob2[0]: mean = factor * blob0,
// var = factor * blob1 with factor = 1 / blob2[0] (0 when blob2[0] is 0).
XTRAIN_HOST_DEVICE inline float stored_factor(float stored_weight) {
  return stored_weight == 0 ? 0.0f : 1.0f / stored_weight;
}

// Caffe's running sums after a training batch of m values per channel, with
// f = moving_average_fraction:
//   weight = f * weight + 1
//   mean_sum = f * mean_sum + mean
//   variance_sum = f * variance_sum + var * m / (m - 1)   (unbiased; 1 when m = 1)
struct RunningSums {
  float fraction;
  float bias_correction;  // m / (m - 1)

  XTRAIN_HOST_DEVICE static float correction_for(unsigned long long m) {
    return m > 1 ? static_cast<float>(m) / static_cast<float>(m - 1) : 1.0f;
  }
  XTRAIN_HOST_DEVICE float weight(float old_weight) const { return old_weight * fraction + 1.0f; }
  XTRAIN_HOST_DEVICE float mean_sum(float old_sum, float mean) const {
    return mean + fraction * old_sum;
  }
  XTRAIN_HOST_DEVICE float variance_sum(float old_sum, float variance) const {
    return bias_correction * variance + fraction * old_sum;
  }
};

}  // namespace xtrain::batch_norm

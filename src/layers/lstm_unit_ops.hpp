// The math of one LSTM cell, shared by LSTMUnit's CPU loop and its CUDA
// kernel (src/layers/lstm_unit_kernels.cu). Per stream n and hidden unit d,
// with the gate input x = (x_i, x_f, x_o, x_g) laid out as Caffe's LSTM
// writes it (four blocks of H values per stream, in that order):
//
//   i = sigmoid(x_i)   f = cont_n sigmoid(x_f)   o = sigmoid(x_o)   g = tanh(x_g)
//   c = f c_prev + i g
//   h = o tanh(c)
//
// cont_n = 0 starts a new sequence: the forget gate is then exactly 0, so the
// previous cell cannot leak in (not even a NaN). Backward, with
// dc~ = dc + dh o (1 - tanh(c)^2), the gradient reaching c:
//
//   dc_prev = dc~ f
//   dx_i = dc~ g i (1 - i)                  dx_o = dh tanh(c) o (1 - o)
//   dx_f = dc~ c_prev cont_n s (1 - s)      dx_g = dc~ i (1 - g^2)
//
// with s = sigmoid(x_f). (Caffe's CPU code writes f (1 - f) for s (1 - s),
// the same for cont in {0, 1}; its GPU code and we differentiate exactly.)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

// Index = n * H + d: one thread per (stream, hidden unit).
struct LstmUnitForward {
  static constexpr std::size_t kWorkPerIndex = 40;
  std::int64_t hidden;  // H
  const float* c_prev;  // N x H
  const float* gates;   // N x 4H
  const float* cont;    // N
  float* c;             // N x H
  float* h;             // N x H

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t n = index / hidden;
    const std::int64_t d = index - n * hidden;
    const float* x = gates + 4 * hidden * n + d;
    const float i = SigmoidForward{}(x[0]);
    const float f = cont[n] == 0.0f ? 0.0f : cont[n] * SigmoidForward{}(x[hidden]);
    const float o = SigmoidForward{}(x[2 * hidden]);
    const float g = tanhf(x[3 * hidden]);
    const float cell = f * c_prev[index] + i * g;
    c[index] = cell;
    h[index] = o * tanhf(cell);
  }
};

// Reads what forward read plus c and the tops' gradients; writes the gate
// input's gradient and, unless c_prev_diff is null, the previous cell's.
struct LstmUnitBackward {
  static constexpr std::size_t kWorkPerIndex = 60;
  std::int64_t hidden;
  const float* c_prev;
  const float* gates;
  const float* cont;
  const float* c;
  const float* c_diff;
  const float* h_diff;
  float* c_prev_diff;  // may be null
  float* gates_diff;

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t n = index / hidden;
    const std::int64_t d = index - n * hidden;
    const std::int64_t offset = 4 * hidden * n + d;
    const float* x = gates + offset;
    const float i = SigmoidForward{}(x[0]);
    const float s = SigmoidForward{}(x[hidden]);
    const float f = cont[n] == 0.0f ? 0.0f : cont[n] * s;
    const float o = SigmoidForward{}(x[2 * hidden]);
    const float g = tanhf(x[3 * hidden]);
    const float tanh_c = tanhf(c[index]);
    const float dc = c_diff[index] + h_diff[index] * o * (1.0f - tanh_c * tanh_c);
    if (c_prev_diff != nullptr) c_prev_diff[index] = dc * f;
    float* dx = gates_diff + offset;
    dx[0] = dc * g * i * (1.0f - i);
    dx[hidden] = dc * c_prev[index] * cont[n] * s * (1.0f - s);
    dx[2 * hidden] = h_diff[index] * tanh_c * o * (1.0f - o);
    dx[3 * hidden] = dc * i * (1.0f - g * g);
  }
};

}  // namespace xtrain::ops

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
// with s = sigmoid(x_f). sigmoid and tanh are cell_tanh.hpp's, which the
// CPU vectorises. (Caffe's CPU code writes f (1 - f) for s (1 - s),
// the same for cont in {0, 1}; its GPU code and we differentiate exactly.)
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/elementwise_ops.hpp"
#include "layers/cell_tanh.hpp"

namespace xtrain::ops {

// The activated gates of one hidden unit (s = sigmoid(x_f), f = cont s).
struct LstmGates {
  float i, s, f, o, g;
};

// The gates from the gate input x (x[0], x[H], x[2H], x[3H]: i, f, o, g).
XTRAIN_HOST_DEVICE inline LstmGates lstm_gates(const float* x, std::int64_t hidden, float cont) {
  LstmGates gate;
  gate.i = cell_sigmoid(x[0]);
  gate.s = cell_sigmoid(x[hidden]);
  gate.f = cont == 0.0f ? 0.0f : cont * gate.s;
  gate.o = cell_sigmoid(x[2 * hidden]);
  gate.g = cell_tanh(x[3 * hidden]);
  return gate;
}

// The gates from their stored activations (a[0], a[H], a[2H], a[3H]: i, s, o, g).
XTRAIN_HOST_DEVICE inline LstmGates lstm_gates_from_activations(const float* a, std::int64_t hidden,
                                                                float cont) {
  return {a[0], a[hidden], cont == 0.0f ? 0.0f : cont * a[hidden], a[2 * hidden], a[3 * hidden]};
}

// c = f c_prev + i g (h = o tanh(c) by the caller).
XTRAIN_HOST_DEVICE inline float lstm_cell(const LstmGates& gate, float c_prev) {
  return gate.f * c_prev + gate.i * gate.g;
}

// The backward of one cell (the formulas above): writes the gate input's
// gradient to dx[0], dx[H], dx[2H], dx[3H] and returns dc_prev.
XTRAIN_HOST_DEVICE inline float lstm_cell_backward(const LstmGates& gate, float tanh_c,
                                                   float c_prev, float cont, float c_diff,
                                                   float h_diff, std::int64_t hidden, float* dx) {
  const float dc = c_diff + h_diff * gate.o * (1.0f - tanh_c * tanh_c);
  dx[0] = dc * gate.g * gate.i * (1.0f - gate.i);
  dx[hidden] = dc * c_prev * cont * gate.s * (1.0f - gate.s);
  dx[2 * hidden] = h_diff * tanh_c * gate.o * (1.0f - gate.o);
  dx[3 * hidden] = dc * gate.i * (1.0f - gate.g * gate.g);
  return dc * gate.f;
}

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
    const LstmGates gate = lstm_gates(gates + 4 * hidden * n + d, hidden, cont[n]);
    const float cell = lstm_cell(gate, c_prev[index]);
    c[index] = cell;
    h[index] = gate.o * cell_tanh(cell);
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
    const std::int64_t offset = 4 * hidden * n + (index - n * hidden);
    const LstmGates gate = lstm_gates(gates + offset, hidden, cont[n]);
    const float c_prev_grad =
        lstm_cell_backward(gate, cell_tanh(c[index]), c_prev[index], cont[n], c_diff[index],
                           h_diff[index], hidden, gates_diff + offset);
    if (c_prev_diff != nullptr) c_prev_diff[index] = c_prev_grad;
  }
};

}  // namespace xtrain::ops

// The per-step math of the fused LSTM and RNN (layers/fused_recurrence.hpp),
// one __host__ __device__ definition each, run by the CPU loop and by the
// CUDA kernel of layers/recurrent_step_kernels.cu. Index = n * H + d: one
// call per (stream, hidden unit) of one time step.
//
// Each step functor also does the small elementwise work around the step that
// the unrolled net did as separate layers, so a step is one GEMM and one pass
// over the state:
//   forward   h_conted_next = cont_{t+1} h_t, the next step's GEMM operand
//             (the unrolled net's Scale layer);
//   backward  dh_t = top_diff_t + cont_{t+1} (W_h^T dgates_{t+1})_t, the sum
//             of the gradient from the top and from the next step (the Split
//             and Scale layers' backward).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/device_for_each_index.hpp"
#include "core/elementwise_ops.hpp"
#include "layers/cell_tanh.hpp"
#include "layers/lstm_unit_ops.hpp"

namespace xtrain::ops {

// The gradient reaching h_t from the top and from step t + 1 (whose input
// was cont_{t+1} h_t); next_diff or cont_next null: none from step t + 1
// (the last step).
XTRAIN_HOST_DEVICE inline float hidden_diff(std::int64_t index, std::int64_t n,
                                            const float* top_diff, const float* next_diff,
                                            const float* cont_next) {
  const float from_top = top_diff != nullptr ? top_diff[index] : 0.0f;
  return next_diff != nullptr ? from_top + cont_next[n] * next_diff[index] : from_top;
}

// LSTMUnit's math (lstm_unit_ops.hpp) for step t. Forward keeps what
// backward needs so that backward computes no transcendental: the gates'
// activations (i, sigmoid(x_f), o, g, written over their inputs) and tanh(c).
// Then h_conted_next = cont_{t+1} h_t (after the last step the caller
// passes ones and a scratch row). No pointer is null: the CPU loop over a
// stream's units (for_each_unit_on below) then vectorises without branches.
struct LstmStepForward {
  static constexpr std::size_t kWorkPerIndex = 42;
  std::int64_t hidden;     // H
  const float* c_prev;     // N x H
  float* gates;            // N x 4H: the gate input in, the activations out
  const float* cont;       // N
  float* c;                // N x H
  float* tanh_c;           // N x H
  float* h;                // N x H
  const float* cont_next;  // N
  float* h_conted_next;    // N x H

  XTRAIN_HOST_DEVICE void at(std::int64_t n, std::int64_t d) const {
    const std::int64_t index = n * hidden + d;
    float* x = gates + 4 * hidden * n + d;
    const LstmGates gate = lstm_gates(x, hidden, cont[n]);
    x[0] = gate.i;
    x[hidden] = gate.s;
    x[2 * hidden] = gate.o;
    x[3 * hidden] = gate.g;
    const float cell = lstm_cell(gate, c_prev[index]);
    const float squashed = cell_tanh(cell);
    c[index] = cell;
    tanh_c[index] = squashed;
    const float value = gate.o * squashed;
    h[index] = value;
    h_conted_next[index] = cont_next[n] * value;
  }
  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    at(index / hidden, index % hidden);
  }
};

// The backward of step t from what forward kept: dh_t = top_diff_t +
// cont_{t+1} next_diff (the gradient from the top and from step t + 1;
// after the last step the caller passes ones and the final state's gradient
// or zeros), then the gate input's gradient, and dc_{t-1} written over dc_t.
struct LstmStepBackward {
  static constexpr std::size_t kWorkPerIndex = 30;
  std::int64_t hidden;
  const float* c_prev;       // N x H
  const float* activations;  // N x 4H: i, sigmoid(x_f), o, g
  const float* cont;         // N
  const float* tanh_c;       // N x H
  float* c_diff;             // N x H: dc_t in, dc_{t-1} out
  const float* top_diff;     // N x H: the top's gradient of h_t
  const float* next_diff;    // N x H: W_hc^T dgates_{t+1}
  const float* cont_next;    // N
  float* gates_diff;         // N x 4H

  XTRAIN_HOST_DEVICE void at(std::int64_t n, std::int64_t d) const {
    const std::int64_t index = n * hidden + d;
    const std::int64_t offset = 4 * hidden * n + d;
    const LstmGates gate = lstm_gates_from_activations(activations + offset, hidden, cont[n]);
    const float dh = top_diff[index] + cont_next[n] * next_diff[index];
    c_diff[index] = lstm_cell_backward(gate, tanh_c[index], c_prev[index], cont[n], c_diff[index],
                                       dh, hidden, gates_diff + offset);
  }
  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    at(index / hidden, index % hidden);
  }
};

// The RNN's step: h_t = tanh(a_t), a_t the summed input; then
// h_conted_next = cont_{t+1} h_t unless cont_next is null.
struct RnnStepForward {
  static constexpr std::size_t kWorkPerIndex = 12;
  std::int64_t hidden;
  const float* input;      // N x H: a_t
  float* h;                // N x H
  const float* cont_next;  // N, or null
  float* h_conted_next;    // N x H, or null

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const float value = TanhForward{}(input[index]);
    h[index] = value;
    if (cont_next != nullptr) h_conted_next[index] = cont_next[index / hidden] * value;
  }
};

// da_t = dh_t (1 - h_t^2), dh_t from hidden_diff above.
struct RnnStepBackward {
  static constexpr std::size_t kWorkPerIndex = 8;
  std::int64_t hidden;
  const float* h;          // N x H
  const float* top_diff;   // N x H: the gradient from the output path, or null
  const float* next_diff;  // N x H: W_hh^T da_{t+1}, or null at the last step
  const float* cont_next;  // N
  float* input_diff;       // N x H: da_t

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const float dh = hidden_diff(index, index / hidden, top_diff, next_diff, cont_next);
    input_diff[index] = dh * (1.0f - h[index] * h[index]);
  }
};

// out = cont_n in: the gradient of the initial state through step 1's
// h_conted_0 = cont_1 h_0 (hidden H per stream).
struct ContScale {
  static constexpr std::size_t kWorkPerIndex = 1;
  std::int64_t hidden;
  const float* cont;  // N
  const float* in;    // N x H
  float* out;         // N x H

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    out[index] = cont[index / hidden] * in[index];
  }
};

#ifndef __CUDACC__
// op.at(n, d) for every stream n and unit d: on a GPU one thread per (n, d)
// (op(index)), on the CPU the streams split across the thread pool and each
// stream's H units one vectorised loop (the units' arrays are contiguous).
template <typename Op>
void for_each_unit_on(const Device& device, std::int64_t streams, std::int64_t hidden,
                      const Op& op) {
  if (device.is_gpu()) {
    for_each_index_on(device, streams * hidden, op);
    return;
  }
  parallel_for(streams, Op::kWorkPerIndex * static_cast<std::size_t>(hidden),
               [&op, hidden](std::int64_t n) {
                 const Op local = op;  // not through a pointer the stores might change
#pragma omp simd
                 for (std::int64_t d = 0; d < hidden; ++d) local.at(n, d);
               });
}
#endif

}  // namespace xtrain::ops

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

#include "core/elementwise_ops.hpp"
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

// LSTMUnit's forward (lstm_unit_ops.hpp) for step t, then
// h_conted_next = cont_{t+1} h_t unless cont_next is null (the last step).
struct LstmStepForward {
  static constexpr std::size_t kWorkPerIndex = 42;
  LstmUnitForward unit;
  const float* cont_next;  // N, or null
  float* h_conted_next;    // N x H, or null

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    unit(index);
    if (cont_next != nullptr) {
      h_conted_next[index] = cont_next[index / unit.hidden] * unit.h[index];
    }
  }
};

// LSTMUnit's backward for step t with dh_t from hidden_diff above written to
// h_diff first (unit.h_diff must point at it). unit.c_diff and
// unit.c_prev_diff may be the same array: each index reads its dc before it
// writes dc_prev.
struct LstmStepBackward {
  static constexpr std::size_t kWorkPerIndex = 64;
  LstmUnitBackward unit;
  const float* top_diff;   // N x H: the top's gradient of h_t, or null
  const float* next_diff;  // N x H: W_hc^T dgates_{t+1}, or null at the last step
  const float* cont_next;  // N
  float* h_diff;           // N x H: receives dh_t (== unit.h_diff)

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t n = index / unit.hidden;
    h_diff[index] = hidden_diff(index, n, top_diff, next_diff, cont_next);
    unit(index);
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

}  // namespace xtrain::ops

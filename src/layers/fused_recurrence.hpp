// The fused computation of RNN and LSTM: all T steps inside the layer, where
// Caffe runs an unrolled net of ~5 small layers per step (recurrent_layer.hpp
// keeps that net as the reference; XTRAIN_RECURRENT=unrolled selects it).
//
// Forward, with G the gate width (4H for LSTM, H for RNN):
//   A = X W_x^T + 1 b^T [+ 1_T (x_static W_static^T)]   one GEMM, TN x G
//   per step t: A_t += (cont_t h_{t-1}) W_h^T             the recurrent GEMM
//               the step's gate kernel (recurrent_step_ops.hpp) -> h_t (c_t)
// Backward, per step in reverse: the gate kernel gives dA_t from dh_t (and
// dc_t), then the recurrent GEMM dA_t W_h the gradient reaching h_{t-1}.
// After the loop the weight gradients are GEMMs over all steps at once:
//   dW_h += dA^T H_conted,  dW_x += dA^T X,  db += dA^T 1,
//   dW_static += (sum_t dA_t)^T x_static,  dX = dA W_x,
//   dx_static = (sum_t dA_t) W_static.
// The parameters are the layer's blobs in Caffe's order, so a weights file
// and a TEST net sharing them see the same arrays as with the unrolled net.
#pragma once

#include <memory>
#include <vector>

#include "core/math_on.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"

namespace xtrain {

// One pass's arrays, on the layer's device. Sizes: T steps, N streams,
// H hidden units, D features of x, S of x_static (0: no static input).
struct RecurrentPass {
  int steps = 0;
  int streams = 0;
  int hidden = 0;
  int input_size = 0;
  int static_size = 0;
  const float* x = nullptr;         // T x N x D
  const float* cont = nullptr;      // T x N
  const float* x_static = nullptr;  // N x S, or null
  // The states before step 1 (h_0, and c_0 for LSTM), 1 x N x H each.
  std::vector<const float*> initial_states;
  // Forward writes the output (T x N x H) and the states after step T.
  float* output = nullptr;
  std::vector<float*> final_states;
  // Backward reads the gradients of the output and of the final states (null:
  // none), and writes those of x, x_static and the initial states (null: not
  // wanted). Parameter gradients accumulate, as the solver expects.
  const float* output_diff = nullptr;
  std::vector<const float*> final_state_diffs;
  float* x_diff = nullptr;
  float* x_static_diff = nullptr;
  std::vector<float*> initial_state_diffs;
  // The learnable blobs in Caffe's order and whether each takes a gradient.
  const std::vector<std::shared_ptr<Blob>>* params = nullptr;
  std::vector<bool> param_propagate_down;
};

class FusedRecurrence {
 public:
  virtual ~FusedRecurrence() = default;
  // Backward uses what the last forward kept (gate inputs, states), so it
  // must follow a forward of the same pass.
  virtual void forward(const Device& device, const RecurrentPass& pass) = 0;
  virtual void backward(const Device& device, const RecurrentPass& pass) = 0;
};

std::unique_ptr<FusedRecurrence> make_fused_lstm();
std::unique_ptr<FusedRecurrence> make_fused_rnn();

// Vectors of ones (over the T N rows, the T steps and the N streams) and the
// N x G sums of the static input's terms, kept between passes.
struct RecurrentScratch {
  math::Ones rows;
  math::Ones steps;
  math::Ones streams;
  Blob static_gates;
};

// Shared by both: the input projection A = X W_x^T + 1 b^T (+ static term)
// into `gates` (T x N x G), and after the backward loop the gradients that
// are GEMMs over all steps, from dA (`gates_diff`) and H_conted (`conted`,
// T x N x H). `first_param` indexes W_x in pass.params; b, W_static (when
// static_size > 0) and W_h follow in Caffe's order.
void project_inputs(const Device& device, const RecurrentPass& pass, int gate_width, float* gates,
                    RecurrentScratch& scratch);
void input_gradients(const Device& device, const RecurrentPass& pass, int gate_width,
                     const float* gates_diff, const float* conted, RecurrentScratch& scratch);
// to = from, n values on `device`.
void copy_on(const Device& device, std::size_t n, const float* from, float* to);
// Index of W_h in pass.params (after W_x, b and maybe W_static).
inline int recurrent_weight_index(const RecurrentPass& pass) {
  return pass.static_size > 0 ? 3 : 2;
}

}  // namespace xtrain

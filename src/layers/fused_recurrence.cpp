// What the fused LSTM and RNN share: the input projection of all steps and
// the gradients that are GEMMs over all steps (fused_recurrence.hpp).
#include "layers/fused_recurrence.hpp"

#include "core/device_apply.hpp"

namespace xtrain {

using math::Transpose;

void copy_on(const Device& device, std::size_t n, const float* from, float* to) {
  if (n == 0) return;
  ops::apply_on(device, n, ops::ScaleBy{1.0f}, to, from);
}

void project_inputs(const Device& device, const RecurrentPass& pass, int gate_width, float* gates,
                    RecurrentScratch& scratch) {
  const math::On blas = math::on(device);
  const auto& params = *pass.params;
  const int rows = pass.steps * pass.streams;
  // A (TN x G) = X (TN x D) W_x^T (D x G) + 1 (TN x 1) b^T (1 x G)
  blas.gemm(Transpose::kNo, Transpose::kYes, rows, gate_width, pass.input_size, 1.0f, pass.x,
            ops::data_on(device, *params[0]), 0.0f, gates);
  blas.gemm(Transpose::kNo, Transpose::kNo, rows, gate_width, 1, 1.0f,
            scratch.rows.on(device, static_cast<std::size_t>(rows)),
            ops::data_on(device, *params[1]), 1.0f, gates);
  if (pass.static_size == 0) return;
  // S (N x G) = x_static (N x S) W_static^T (S x G), added to every step:
  // A (T x NG) += 1 (T x 1) S (1 x NG).
  scratch.static_gates.reshape({pass.streams, gate_width});
  float* static_gates = ops::mutable_data_on(device, scratch.static_gates);
  blas.gemm(Transpose::kNo, Transpose::kYes, pass.streams, gate_width, pass.static_size, 1.0f,
            pass.x_static, ops::data_on(device, *params[2]), 0.0f, static_gates);
  blas.gemm(Transpose::kNo, Transpose::kNo, pass.steps, pass.streams * gate_width, 1, 1.0f,
            scratch.steps.on(device, static_cast<std::size_t>(pass.steps)), static_gates, 1.0f,
            gates);
}

void input_gradients(const Device& device, const RecurrentPass& pass, int gate_width,
                     const float* gates_diff, const float* conted, RecurrentScratch& scratch) {
  const math::On blas = math::on(device);
  const auto& params = *pass.params;
  const auto& wanted = pass.param_propagate_down;
  const int rows = pass.steps * pass.streams;
  const int hidden_weights = recurrent_weight_index(pass);
  // dW_h (G x H) += dA^T (G x TN) H_conted (TN x H)
  if (wanted[hidden_weights]) {
    blas.gemm(Transpose::kYes, Transpose::kNo, gate_width, pass.hidden, rows, 1.0f, gates_diff,
              conted, 1.0f, ops::mutable_diff_on(device, *params[hidden_weights]));
  }
  // dW_x (G x D) += dA^T (G x TN) X (TN x D)
  if (wanted[0]) {
    blas.gemm(Transpose::kYes, Transpose::kNo, gate_width, pass.input_size, rows, 1.0f, gates_diff,
              pass.x, 1.0f, ops::mutable_diff_on(device, *params[0]));
  }
  // db (G) += dA^T 1
  if (wanted[1]) {
    blas.gemv(Transpose::kYes, rows, gate_width, 1.0f, gates_diff,
              scratch.rows.on(device, static_cast<std::size_t>(rows)), 1.0f,
              ops::mutable_diff_on(device, *params[1]));
  }
  if (pass.static_size > 0 && (wanted[2] || pass.x_static_diff != nullptr)) {
    // The static term's gradient is the sum over steps: dS (N x G) = dA^T 1_T.
    scratch.static_gates.reshape({pass.streams, gate_width});
    float* summed = ops::mutable_diff_on(device, scratch.static_gates);
    blas.gemv(Transpose::kYes, pass.steps, pass.streams * gate_width, 1.0f, gates_diff,
              scratch.steps.on(device, static_cast<std::size_t>(pass.steps)), 0.0f, summed);
    // dW_static (G x S) += dS^T (G x N) x_static (N x S)
    if (wanted[2]) {
      blas.gemm(Transpose::kYes, Transpose::kNo, gate_width, pass.static_size, pass.streams, 1.0f,
                summed, pass.x_static, 1.0f, ops::mutable_diff_on(device, *params[2]));
    }
    // dx_static (N x S) = dS (N x G) W_static (G x S)
    if (pass.x_static_diff != nullptr) {
      blas.gemm(Transpose::kNo, Transpose::kNo, pass.streams, pass.static_size, gate_width, 1.0f,
                summed, ops::data_on(device, *params[2]), 0.0f, pass.x_static_diff);
    }
  }
  // dX (TN x D) = dA (TN x G) W_x (G x D)
  if (pass.x_diff != nullptr) {
    blas.gemm(Transpose::kNo, Transpose::kNo, rows, pass.input_size, gate_width, 1.0f, gates_diff,
              ops::data_on(device, *params[0]), 0.0f, pass.x_diff);
  }
}

}  // namespace xtrain

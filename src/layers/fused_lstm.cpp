// The fused LSTM (fused_recurrence.hpp): per step one recurrent GEMM and one
// gate kernel, LSTMUnit's math (lstm_unit_ops.hpp) wrapped by
// recurrent_step_ops.hpp. Parameters, in Caffe's order:
//   W_xc (4H x D), b_c (4H), [W_xc_static (4H x S)], W_hc (4H x H).
#include "core/device_apply.hpp"
#include "core/device_for_each_index.hpp"
#include "layers/fused_recurrence.hpp"
#include "layers/recurrent_step_ops.hpp"

namespace xtrain {
namespace {

using math::Transpose;

class FusedLstm : public FusedRecurrence {
 public:
  void forward(const Device& device, const RecurrentPass& pass) override {
    const int steps = pass.steps;
    const int streams = pass.streams;
    const int hidden = pass.hidden;
    const int gates_width = 4 * hidden;
    const std::int64_t state = static_cast<std::int64_t>(streams) * hidden;
    const std::int64_t step_gates = static_cast<std::int64_t>(streams) * gates_width;
    gates_.reshape({steps, streams, gates_width});
    cells_.reshape({steps, streams, hidden});
    conted_.reshape({steps + 1, streams, hidden});  // + the last step's unused output
    squashed_cells_.reshape({steps, streams, hidden});
    float* gates = ops::mutable_data_on(device, gates_);
    float* cells = ops::mutable_data_on(device, cells_);
    float* conted = ops::mutable_data_on(device, conted_);
    float* tanh_c = ops::mutable_data_on(device, squashed_cells_);
    const float* w_h = ops::data_on(device, *(*pass.params)[recurrent_weight_index(pass)]);
    const float* ones = scratch_.streams.on(device, static_cast<std::size_t>(streams));
    const math::On blas = math::on(device);

    project_inputs(device, pass, gates_width, gates, scratch_);
    ops::for_each_index_on(device, state,
                           ops::ContScale{hidden, pass.cont, pass.initial_states[0], conted});
    for (int t = 0; t < steps; ++t) {
      float* step = gates + t * step_gates;
      // A_t (N x 4H) += (cont_t h_{t-1}) (N x H) W_hc^T (H x 4H)
      blas.gemm(Transpose::kNo, Transpose::kYes, streams, gates_width, hidden, 1.0f,
                conted + t * state, w_h, 1.0f, step);
      const bool last = t + 1 == steps;
      const ops::LstmStepForward op{hidden,
                                    t == 0 ? pass.initial_states[1] : cells + (t - 1) * state,
                                    step,
                                    pass.cont + t * streams,
                                    cells + t * state,
                                    tanh_c + t * state,
                                    pass.output + t * state,
                                    last ? ones : pass.cont + (t + 1) * streams,
                                    conted + (t + 1) * state};
      ops::for_each_unit_on(device, streams, hidden, op);
    }
    if (pass.final_states[0] != nullptr) {
      copy_on(device, state, pass.output + (steps - 1) * state, pass.final_states[0]);
    }
    if (pass.final_states[1] != nullptr) {
      copy_on(device, state, cells + (steps - 1) * state, pass.final_states[1]);
    }
  }

  void backward(const Device& device, const RecurrentPass& pass) override {
    const int steps = pass.steps;
    const int streams = pass.streams;
    const int hidden = pass.hidden;
    const int gates_width = 4 * hidden;
    const std::int64_t state = static_cast<std::int64_t>(streams) * hidden;
    const std::int64_t step_gates = static_cast<std::int64_t>(streams) * gates_width;
    step_.reshape({streams, hidden});
    const float* activations = ops::data_on(device, gates_);
    const float* tanh_c = ops::data_on(device, squashed_cells_);
    const float* cells = ops::data_on(device, cells_);
    float* gates_diff = ops::mutable_diff_on(device, gates_);
    // W_hc^T dA_{t+1} per stream, and dc_t carried from step t + 1 to t.
    float* recurrent = ops::mutable_data_on(device, step_);
    float* cell_diff = ops::mutable_diff_on(device, step_);
    const float* w_h = ops::data_on(device, *(*pass.params)[recurrent_weight_index(pass)]);
    const float* ones = scratch_.streams.on(device, static_cast<std::size_t>(streams));
    const math::On blas = math::on(device);

    if (pass.final_state_diffs[1] != nullptr) {
      copy_on(device, state, pass.final_state_diffs[1], cell_diff);
    } else {
      blas.set(state, 0.0f, cell_diff);
    }
    // What reaches h_T from outside: the exposed state's gradient, or none.
    const float* final_h_diff = pass.final_state_diffs[0];
    if (final_h_diff == nullptr) {
      blas.set(state, 0.0f, recurrent);
      final_h_diff = recurrent;
    }
    for (int t = steps - 1; t >= 0; --t) {
      const bool last = t + 1 == steps;
      float* step_diff = gates_diff + t * step_gates;
      const ops::LstmStepBackward op{hidden,
                                     t == 0 ? pass.initial_states[1] : cells + (t - 1) * state,
                                     activations + t * step_gates,
                                     pass.cont + t * streams,
                                     tanh_c + t * state,
                                     cell_diff,
                                     pass.output_diff + t * state,
                                     last ? final_h_diff : recurrent,
                                     last ? ones : pass.cont + (t + 1) * streams,
                                     step_diff};
      ops::for_each_unit_on(device, streams, hidden, op);
      if (t == 0 && pass.initial_state_diffs[0] == nullptr) break;
      // W_hc^T dA_t: dA_t (N x 4H) W_hc (4H x H)
      blas.gemm(Transpose::kNo, Transpose::kNo, streams, hidden, gates_width, 1.0f, step_diff, w_h,
                0.0f, recurrent);
    }
    if (pass.initial_state_diffs[0] != nullptr) {
      ops::for_each_index_on(
          device, state, ops::ContScale{hidden, pass.cont, recurrent, pass.initial_state_diffs[0]});
    }
    if (pass.initial_state_diffs[1] != nullptr) {
      copy_on(device, state, cell_diff, pass.initial_state_diffs[1]);
    }
    input_gradients(device, pass, gates_width, gates_diff, ops::data_on(device, conted_), scratch_);
  }

 private:
  Blob gates_;           // T x N x 4H: the gates' activations (data) and dA (diff)
  Blob cells_;           // T x N x H: c_t
  Blob squashed_cells_;  // T x N x H: tanh(c_t)
  Blob conted_;          // (T + 1) x N x H: step t's cont_t h_{t-1}
  Blob step_;            // N x H: see backward
  RecurrentScratch scratch_;
};

}  // namespace

std::unique_ptr<FusedRecurrence> make_fused_lstm() { return std::make_unique<FusedLstm>(); }

}  // namespace xtrain

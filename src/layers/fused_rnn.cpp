// The fused RNN (fused_recurrence.hpp): per step one recurrent GEMM and the
// tanh of recurrent_step_ops.hpp; the output layer o = tanh(W_ho h + b_o)
// needs no recurrence, so it is one GEMM over all steps each way.
// Parameters, in Caffe's order:
//   W_xh (H x D), b_h (H), [W_xh_static (H x S)], W_hh (H x H), W_ho (H x H), b_o (H).
#include "core/device_apply.hpp"
#include "core/device_for_each_index.hpp"
#include "layers/fused_recurrence.hpp"
#include "layers/recurrent_step_ops.hpp"

namespace xtrain {
namespace {

using math::Transpose;

class FusedRnn : public FusedRecurrence {
 public:
  void forward(const Device& device, const RecurrentPass& pass) override {
    const int steps = pass.steps;
    const int streams = pass.streams;
    const int hidden = pass.hidden;
    const int rows = steps * streams;
    const std::int64_t state = static_cast<std::int64_t>(streams) * hidden;
    inputs_.reshape({steps, streams, hidden});
    hidden_.reshape({steps, streams, hidden});
    conted_.reshape({steps, streams, hidden});
    float* inputs = ops::mutable_data_on(device, inputs_);
    float* h = ops::mutable_data_on(device, hidden_);
    float* conted = ops::mutable_data_on(device, conted_);
    const int w_hh = recurrent_weight_index(pass);
    const auto& params = *pass.params;
    const math::On blas = math::on(device);

    project_inputs(device, pass, hidden, inputs, scratch_);
    ops::for_each_index_on(device, state,
                           ops::ContScale{hidden, pass.cont, pass.initial_states[0], conted});
    for (int t = 0; t < steps; ++t) {
      float* step = inputs + t * state;
      // a_t (N x H) += (cont_t h_{t-1}) (N x H) W_hh^T (H x H)
      blas.gemm(Transpose::kNo, Transpose::kYes, streams, hidden, hidden, 1.0f, conted + t * state,
                ops::data_on(device, *params[w_hh]), 1.0f, step);
      const bool last = t + 1 == steps;
      ops::for_each_index_on(device, state,
                             ops::RnnStepForward{hidden, step, h + t * state,
                                                 last ? nullptr : pass.cont + (t + 1) * streams,
                                                 last ? nullptr : conted + (t + 1) * state});
    }
    // O (TN x H) = tanh(H (TN x H) W_ho^T (H x H) + 1 b_o^T)
    blas.gemm(Transpose::kNo, Transpose::kYes, rows, hidden, hidden, 1.0f, h,
              ops::data_on(device, *params[w_hh + 1]), 0.0f, pass.output);
    blas.gemm(Transpose::kNo, Transpose::kNo, rows, hidden, 1, 1.0f,
              scratch_.rows.on(device, static_cast<std::size_t>(rows)),
              ops::data_on(device, *params[w_hh + 2]), 1.0f, pass.output);
    ops::apply_on(device, static_cast<std::size_t>(rows) * hidden, ops::TanhForward{}, pass.output,
                  static_cast<const float*>(pass.output));
    if (pass.final_states[0] != nullptr) {
      copy_on(device, state, h + (steps - 1) * state, pass.final_states[0]);
    }
  }

  void backward(const Device& device, const RecurrentPass& pass) override {
    const int steps = pass.steps;
    const int streams = pass.streams;
    const int hidden = pass.hidden;
    const int rows = steps * streams;
    const std::int64_t state = static_cast<std::int64_t>(streams) * hidden;
    const std::size_t all = static_cast<std::size_t>(rows) * hidden;
    output_diff_.reshape({steps, streams, hidden});
    step_.reshape({streams, hidden});
    const int w_hh = recurrent_weight_index(pass);
    const auto& params = *pass.params;
    const auto& wanted = pass.param_propagate_down;
    const float* h = ops::data_on(device, hidden_);
    float* input_diff = ops::mutable_diff_on(device, inputs_);
    float* h_diff = ops::mutable_diff_on(device, hidden_);  // from the output path
    float* o_diff = ops::mutable_data_on(device, output_diff_);
    float* recurrent = ops::mutable_data_on(device, step_);
    const float* ones = scratch_.streams.on(device, static_cast<std::size_t>(streams));
    const math::On blas = math::on(device);

    // d(W_ho h + b_o) = dO (1 - O^2), then the output layer's gradients.
    ops::apply_on(device, all, ops::TanhBackward{}, o_diff, static_cast<const float*>(pass.output),
                  pass.output_diff);
    if (wanted[w_hh + 1]) {
      blas.gemm(Transpose::kYes, Transpose::kNo, hidden, hidden, rows, 1.0f, o_diff, h, 1.0f,
                ops::mutable_diff_on(device, *params[w_hh + 1]));
    }
    if (wanted[w_hh + 2]) {
      blas.gemv(Transpose::kYes, rows, hidden, 1.0f, o_diff,
                scratch_.rows.on(device, static_cast<std::size_t>(rows)), 1.0f,
                ops::mutable_diff_on(device, *params[w_hh + 2]));
    }
    blas.gemm(Transpose::kNo, Transpose::kNo, rows, hidden, hidden, 1.0f, o_diff,
              ops::data_on(device, *params[w_hh + 1]), 0.0f, h_diff);

    const float* w = ops::data_on(device, *params[w_hh]);
    for (int t = steps - 1; t >= 0; --t) {
      const bool last = t + 1 == steps;
      float* step_diff = input_diff + t * state;
      ops::for_each_index_on(
          device, state,
          ops::RnnStepBackward{hidden, h + t * state, h_diff + t * state,
                               last ? pass.final_state_diffs[0] : recurrent,
                               last ? ones : pass.cont + (t + 1) * streams, step_diff});
      if (t == 0 && pass.initial_state_diffs[0] == nullptr) break;
      // W_hh^T da_t: da_t (N x H) W_hh (H x H)
      blas.gemm(Transpose::kNo, Transpose::kNo, streams, hidden, hidden, 1.0f, step_diff, w, 0.0f,
                recurrent);
    }
    if (pass.initial_state_diffs[0] != nullptr) {
      ops::for_each_index_on(
          device, state, ops::ContScale{hidden, pass.cont, recurrent, pass.initial_state_diffs[0]});
    }
    input_gradients(device, pass, hidden, input_diff, ops::data_on(device, conted_), scratch_);
  }

 private:
  Blob inputs_;       // T x N x H: a_t (data) and da_t (diff)
  Blob hidden_;       // T x N x H: h_t (data) and the output path's dh_t (diff)
  Blob conted_;       // T x N x H: step t's cont_t h_{t-1}
  Blob output_diff_;  // T x N x H: d(W_ho h + b_o)
  Blob step_;         // N x H: W_hh^T da_{t+1}
  RecurrentScratch scratch_;
};

}  // namespace

std::unique_ptr<FusedRecurrence> make_fused_rnn() { return std::make_unique<FusedRnn>(); }

}  // namespace xtrain

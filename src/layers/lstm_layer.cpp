// LSTM (Caffe's type "LSTM"): a long short-term memory net over T time steps
// (recurrent_layer.hpp has the bottoms, tops and the unrolling), with
// H = num_output and the gate input of each step
//   gate_t = W_hc (cont_t h_{t-1}) + W_xc x_t + b_c [+ W_xc_static x_static]   (4H)
// fed with c_{t-1} and cont_t to an LSTMUnit (lstm_unit_ops.hpp), which
// computes c_t and h_t from the gates i, f, o, g in that order. The top is h
// (T x N x H). Learnable blobs, in Caffe's order:
//   W_xc (4H x D), b_c (4H), [W_xc_static (4H x S)], W_hc (4H x H).
#include <string>

#include "layers/builtin_layers.hpp"
#include "layers/recurrent_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class LstmLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "LSTM"; }

 protected:
  std::vector<std::string> state_input_names() const override { return {"h_0", "c_0"}; }
  std::vector<std::string> state_output_names() const override {
    const std::string last = std::to_string(time_steps());
    return {"h_" + last, "c_" + last};
  }
  std::string output_name() const override { return "h"; }

  std::unique_ptr<FusedRecurrence> make_fused() const override { return make_fused_lstm(); }

  void add_unrolled_layers(NetParameter* net) const override {
    const int gates = 4 * num_output();
    const int steps = time_steps();

    // W_xc x_t + b_c for every step at once.
    const StepSlices slices = add_input_transforms(net, "c", gates);
    LayerParameter concat = steps_concat("h");

    for (int t = 1; t <= steps; ++t) {
      const std::string now = std::to_string(t);
      const std::string before = std::to_string(t - 1);
      // The cell's reset is LSTMUnit's, through its forget gate.
      add_step_input(net, slices, t, "c", gates,
                     {"transform_" + now, "gate_input_" + now, "gate_input_" + now});
      add_unrolled_layer(net, "unit_" + now, "LSTMUnit",
                         {"c_" + before, "gate_input_" + now, "cont_" + now},
                         {"c_" + now, "h_" + now});
      concat.add_bottom("h_" + now);
    }
    *net->add_layer() = concat;
  }
};

}  // namespace

void register_lstm_layer(LayerRegistry& registry) { add_layer<LstmLayer>(registry, "LSTM"); }

}  // namespace xtrain

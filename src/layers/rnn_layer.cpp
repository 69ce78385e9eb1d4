// RNN (Caffe's type "RNN"): a simple recurrent net over T time steps
// (recurrent_layer.hpp has the bottoms, tops and the unrolling), with
// H = num_output:
//   h_t = tanh(W_hh (cont_t h_{t-1}) + W_xh x_t + b_h [+ W_xh_static x_static])
//   o_t = tanh(W_ho h_t + b_o)
// The top is o (T x N x H). Learnable blobs, in Caffe's order:
//   W_xh (H x D), b_h (H), [W_xh_static (H x S)], W_hh (H x H), W_ho (H x H), b_o (H).
#include <string>

#include "layers/builtin_layers.hpp"
#include "layers/recurrent_layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class RnnLayer : public RecurrentLayer {
 public:
  using RecurrentLayer::RecurrentLayer;
  const char* type() const override { return "RNN"; }

 protected:
  std::vector<std::string> state_input_names() const override { return {"h_0"}; }
  std::vector<std::string> state_output_names() const override {
    return {"h_" + std::to_string(time_steps())};
  }
  std::string output_name() const override { return "o"; }

  std::unique_ptr<FusedRecurrence> make_fused() const override { return make_fused_rnn(); }

  void add_unrolled_layers(NetParameter* net) const override {
    const RecurrentParameter& recurrent = param_.recurrent_param();
    const int hidden = num_output();
    const int steps = time_steps();

    // W_xh x_t + b_h for every step at once.
    const StepSlices slices = add_input_transforms(net, "h", hidden);
    LayerParameter concat = steps_concat("o");

    for (int t = 1; t <= steps; ++t) {
      const std::string now = std::to_string(t);
      const std::string before = std::to_string(t - 1);
      add_step_input(net, slices, t, "h", hidden,
                     {"W_hh_h_" + before, "h_input_sum_" + now, "h_neuron_input_" + now});
      add_unrolled_layer(net, "h_neuron_" + now, "TanH", {"h_neuron_input_" + now}, {"h_" + now});
      add_shared_inner_product(net, recurrent, "W_ho_h_" + now, "h_" + now, "W_ho_h_" + now, hidden,
                               2, "W_ho", "b_o");
      add_unrolled_layer(net, "o_neuron_" + now, "TanH", {"W_ho_h_" + now}, {"o_" + now});
      concat.add_bottom("o_" + now);
    }
    *net->add_layer() = concat;
  }
};

}  // namespace

void register_rnn_layer(LayerRegistry& registry) { add_layer<RnnLayer>(registry, "RNN"); }

}  // namespace xtrain

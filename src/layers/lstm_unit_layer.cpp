// LSTMUnit (Caffe's type "LSTMUnit"): one time step of an LSTM's cell, the
// step the LSTM layer's unrolled net repeats.
//   bottom[0] c_prev  1 x N x H     the previous cell state
//   bottom[1] gates   1 x N x 4H    the gate input (i, f, o, g blocks)
//   bottom[2] cont    1 x N         0 where a new sequence starts
//   top[0]    c       1 x N x H
//   top[1]    h       1 x N x H
// The math (layers/lstm_unit_ops.hpp):
//   c = cont sigmoid(x_f) c_prev + sigmoid(x_i) tanh(x_g),  h = sigmoid(x_o) tanh(c)
// cont gets no gradient, as in Caffe.
#include "core/device_apply.hpp"
#include "core/device_for_each_index.hpp"
#include "layers/any_device_layer.hpp"
#include "layers/builtin_layers.hpp"
#include "layers/lstm_unit_ops.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

class LstmUnitLayer : public AnyDeviceLayer<Layer> {
 public:
  using AnyDeviceLayer::AnyDeviceLayer;
  const char* type() const override { return "LSTMUnit"; }
  int exact_num_bottom_blobs() const override { return 3; }
  int exact_num_top_blobs() const override { return 2; }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 2; }

  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    const char* names[] = {"c_prev", "gate input", "cont"};
    for (int b = 0; b < 3; ++b) {
      const int axes = b == 2 ? 2 : 3;
      XTRAIN_CHECK(bottom[b]->num_axes() == axes && bottom[b]->shape(0) == 1, where(), ": ",
                   names[b], " (bottom[", b, "]) is ", bottom[b]->shape_string(), "; it must be ",
                   b == 2 ? "1 x N" : "1 x N x ...", " (one time step of N streams)");
    }
    const int streams = bottom[0]->shape(1);
    hidden_ = bottom[0]->shape(2);
    XTRAIN_CHECK(bottom[1]->shape(1) == streams && bottom[2]->shape(1) == streams &&
                     bottom[1]->shape(2) == 4 * hidden_,
                 where(), ": with c_prev ", bottom[0]->shape_string(),
                 " the gate input must be 1 x ", streams, " x ", 4 * hidden_, " and cont 1 x ",
                 streams, ", but they are ", bottom[1]->shape_string(), " and ",
                 bottom[2]->shape_string());
    top[0]->reshape_like(*bottom[0]);
    top[1]->reshape_like(*bottom[0]);
  }

 private:
  void forward_on(const BlobVec& bottom, const BlobVec& top) override {
    const Device& on = device();
    const ops::LstmUnitForward op{hidden_,
                                  ops::data_on(on, *bottom[0]),
                                  ops::data_on(on, *bottom[1]),
                                  ops::data_on(on, *bottom[2]),
                                  ops::mutable_data_on(on, *top[0]),
                                  ops::mutable_data_on(on, *top[1])};
    ops::for_each_index_on(on, static_cast<std::int64_t>(top[0]->count()), op);
  }

  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) override {
    XTRAIN_CHECK(!propagate_down[2], where(),
                 ": cont (bottom[2]) takes no gradient; set propagate_down: false for it");
    if (!propagate_down[0] && !propagate_down[1]) return;
    const Device& on = device();
    // The functor writes the gate input's gradient with c_prev's; when only
    // c_prev's is asked for, it goes to a scratch blob, since bottom[1]'s
    // diff may then be storage that other blobs use (core/net_memory_plan).
    if (!propagate_down[1]) gates_scratch_.reshape_like(*bottom[1]);
    const ops::LstmUnitBackward op{
        hidden_,
        ops::data_on(on, *bottom[0]),
        ops::data_on(on, *bottom[1]),
        ops::data_on(on, *bottom[2]),
        ops::data_on(on, *top[0]),
        ops::diff_on(on, *top[0]),
        ops::diff_on(on, *top[1]),
        propagate_down[0] ? ops::mutable_diff_on(on, *bottom[0]) : nullptr,
        ops::mutable_diff_on(on, propagate_down[1] ? *bottom[1] : gates_scratch_)};
    ops::for_each_index_on(on, static_cast<std::int64_t>(top[0]->count()), op);
  }

  std::int64_t hidden_ = 0;
  Blob gates_scratch_;
};

}  // namespace

void register_lstm_unit_layer(LayerRegistry& registry) {
  add_layer<LstmUnitLayer>(registry, "LSTMUnit");
}

}  // namespace xtrain

// The base of Caffe's recurrent layers (RNN, LSTM): the layer builds a net
// unrolled over the T time steps of its input, whose layers share one set of
// weights by parameter name, and runs it as its forward and backward.
//
//   bottom[0] x         T x N x ...   T time steps of N independent streams
//   bottom[1] cont      T x N         0 where a stream starts a new sequence
//                                     (the hidden state is reset), else 1
//   bottom[2] x_static  N x ...       optional: an input seen at every step
//   then, with recurrent_param.expose_hidden, the initial states (h_0, and
//   c_0 for LSTM), each 1 x N x num_output
//   top[0]              T x N x num_output
//   then, with expose_hidden, the final states (h_T, and c_T for LSTM)
//
// Without expose_hidden the final state of one forward is the initial state
// of the next, so a long sequence can be fed T steps at a time (cont = 1
// where a chunk continues the previous one); no gradient crosses chunks.
// With expose_hidden the caller passes the states; unlike Caffe, which
// passes no gradient through them, the initial states get theirs and the
// final states' top diffs flow back into the steps.
//
// The learnable blobs are the unrolled net's parameters in the order its
// layers first use them, Caffe's order, so Caffe-trained weights load.
//
// Two implementations compute the same function (tests compare them):
//   fused     (the default) all T steps inside the layer, per step one
//             recurrent GEMM and one gate kernel (fused_recurrence.hpp);
//   unrolled  Caffe's unrolled net, the reference: chosen by the environment
//             variable XTRAIN_RECURRENT=unrolled, and always for layers that
//             compute in fp16/bf16 or set recurrent_param.debug_info (which
//             reports the unrolled net's layers).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "layers/any_device_layer.hpp"
#include "layers/fused_recurrence.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

// Building blocks of the unrolled nets: a layer named `name` of `type`
// appended to `net`, and an InnerProduct over axis `axis` (2: each time
// step's features; 1: the static input's) whose weight, and bias when
// `bias_name` is not empty, are shared under those names.
LayerParameter* add_unrolled_layer(NetParameter* net, const std::string& name,
                                   const std::string& type, const std::vector<std::string>& bottoms,
                                   const std::vector<std::string>& tops);
LayerParameter* add_shared_inner_product(NetParameter* net, const RecurrentParameter& recurrent,
                                         const std::string& name, const std::string& bottom,
                                         const std::string& top, int num_output, int axis,
                                         const std::string& weight_name,
                                         const std::string& bias_name = "");
// The Concat along the time axis that gathers the steps' outputs (the caller
// adds them as bottoms) into `output`, named output + "_concat".
LayerParameter steps_concat(const std::string& output);

// Which implementation XTRAIN_RECURRENT asks for: true for "fused" or unset,
// false for "unrolled"; anything else is an error naming both.
bool recurrent_fused_from_environment();

class RecurrentLayer : public AnyDeviceLayer<Layer> {
 public:
  using AnyDeviceLayer::AnyDeviceLayer;

  int min_bottom_blobs() const override { return 2 + exposed_state_count(); }
  int max_bottom_blobs() const override { return 3 + exposed_state_count(); }
  int exact_num_top_blobs() const override { return 1 + exposed_state_count(); }
  bool allow_force_backward(int bottom_index) const override { return bottom_index != 1; }

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  void reshape(const BlobVec& bottom, const BlobVec& top) override;

 protected:
  // The architecture: the names of the recurrent state blobs (h, and c for
  // LSTM) before the first step and after the last, the name of the output,
  // and the layers that compute them from the blobs "x", "cont" (and
  // "x_static" when static_input()) and the state inputs. States are
  // 1 x N x num_output.
  virtual std::vector<std::string> state_input_names() const = 0;
  virtual std::vector<std::string> state_output_names() const = 0;
  virtual std::string output_name() const = 0;
  virtual void add_unrolled_layers(NetParameter* net) const = 0;
  // The same layer computed without the unrolled net.
  virtual std::unique_ptr<FusedRecurrence> make_fused() const = 0;

  // The layers every unrolled net starts with, for the gate input or state
  // `g` ("c" for LSTM, "h" for RNN) of `width` values: "cont" and W_xg x + b_g
  // (every step at once, as "W_xg_x") each sliced along the time axis (the
  // caller adds the slices' tops "cont_t" and "W_xg_x_t"), and with
  // static_input() the static input's W_xg_static x_static as
  // "W_xg_x_static" (1 x N x width).
  struct StepSlices {
    LayerParameter* cont;
    LayerParameter* x;
  };
  StepSlices add_input_transforms(NetParameter* net, const std::string& g, int width) const;
  // The names an architecture gives step t's layers below (Caffe's, which
  // the unrolled nets keep).
  struct StepInputNames {
    std::string transform;  // the InnerProduct W_hg h_conted_{t-1}
    std::string sum;        // the Eltwise sum
    std::string sum_top;    // its top
  };
  // Step t's input to the recurrence of g (as above): the slices' tops
  // "cont_t" and "W_xg_x_t", h_conted_{t-1} = cont_t h_{t-1} (a new sequence
  // starts from zero), and sum_top = W_hg h_conted_{t-1} + W_xg x_t
  // (+ W_xg_x_static).
  void add_step_input(NetParameter* net, const StepSlices& slices, int t, const std::string& g,
                      int width, const StepInputNames& names) const;

  int time_steps() const { return time_steps_; }
  bool static_input() const { return static_input_; }

 public:
  // Whether this layer runs fused (see above); for tests and logs.
  bool fused() const { return fused_ != nullptr; }

 protected:
  int num_output() const { return static_cast<int>(param_.recurrent_param().num_output()); }

 private:
  // The unrolled net's layers run on this layer's device themselves.
  void forward_on(const BlobVec& bottom, const BlobVec& top) override;
  void backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                   const BlobVec& bottom) override;
  int exposed_state_count() const;
  int first_state_bottom() const { return 2 + (static_input_ ? 1 : 0); }
  void check_shapes(const BlobVec& bottom) const;
  NetParameter unrolled_net_param(const BlobVec& bottom) const;
  void setup_unrolled(const BlobVec& bottom);
  void setup_fused(const BlobVec& bottom);
  RecurrentPass fused_pass(const BlobVec& bottom) const;
  void forward_fused(const BlobVec& bottom, const BlobVec& top);
  void backward_fused(const BlobVec& top, const std::vector<bool>& propagate_down,
                      const BlobVec& bottom);
  void connect_blobs(const BlobVec& bottom, const BlobVec& top);
  void zero_state_outputs(bool data) const;
  void log_debug_info(bool backward) const;

  int time_steps_ = 0;
  int streams_ = 0;
  bool static_input_ = false;
  bool expose_hidden_ = false;
  std::unique_ptr<Net> unrolled_;
  // The fused implementation (null when unrolled) and, without
  // expose_hidden, the states it starts from and ends with (1 x N x H).
  std::unique_ptr<FusedRecurrence> fused_;
  std::vector<std::unique_ptr<Blob>> fused_initial_;
  std::vector<std::unique_ptr<Blob>> fused_final_;
  // In the unrolled net: x, cont, x_static (or null), the states before the
  // first step and after the last, the exposed copies of the latter, and the
  // output.
  Blob* x_ = nullptr;
  Blob* cont_ = nullptr;
  Blob* x_static_ = nullptr;
  std::vector<Blob*> state_inputs_;
  std::vector<Blob*> state_outputs_;
  std::vector<Blob*> exposed_states_;
  Blob* output_ = nullptr;
  // Where an input's gradient goes when the outer net asks for none of it.
  std::vector<std::unique_ptr<Blob>> unused_gradients_;
};

}  // namespace xtrain

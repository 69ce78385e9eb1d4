// The unrolled net of RNN and LSTM: building it, wiring its inputs and
// outputs to the layer's blobs, and running it (see recurrent_layer.hpp).
//
// The unrolled net is built with force_backward, so every input it has gets
// a gradient (Caffe instead forces the gradient of x alone and adds
// pseudo-losses to the outputs); the outer net's propagate_down then decides
// which of them reach the bottoms.
#include "layers/recurrent_layer.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/device_apply.hpp"
#include "core/device_memory.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

BlobShape shape_of(const Blob& blob) {
  BlobShape shape;
  for (int dim : blob.shape()) shape.add_dim(dim);
  return shape;
}

void fill_zero(const Device& device, Blob& blob, bool data) {
  if (blob.count() == 0) return;
  if (device.is_gpu()) {
    device_memory::zero(data ? blob.mutable_gpu_data() : blob.mutable_gpu_diff(),
                        blob.count() * sizeof(float), device.id);
    return;
  }
  float* values = data ? blob.mutable_cpu_data() : blob.mutable_cpu_diff();
  std::fill_n(values, blob.count(), 0.0f);
}

}  // namespace

LayerParameter* add_unrolled_layer(NetParameter* net, const std::string& name,
                                   const std::string& type, const std::vector<std::string>& bottoms,
                                   const std::vector<std::string>& tops) {
  LayerParameter* layer = net->add_layer();
  layer->set_name(name);
  layer->set_type(type);
  for (const std::string& bottom : bottoms) layer->add_bottom(bottom);
  for (const std::string& top : tops) layer->add_top(top);
  return layer;
}

LayerParameter* add_shared_inner_product(NetParameter* net, const RecurrentParameter& recurrent,
                                         const std::string& name, const std::string& bottom,
                                         const std::string& top, int num_output, int axis,
                                         const std::string& weight_name,
                                         const std::string& bias_name) {
  LayerParameter* layer = add_unrolled_layer(net, name, "InnerProduct", {bottom}, {top});
  InnerProductParameter* inner = layer->mutable_inner_product_param();
  inner->set_num_output(static_cast<unsigned>(num_output));
  inner->set_axis(axis);
  inner->set_bias_term(!bias_name.empty());
  *inner->mutable_weight_filler() = recurrent.weight_filler();
  layer->add_param()->set_name(weight_name);
  if (!bias_name.empty()) {
    *inner->mutable_bias_filler() = recurrent.bias_filler();
    layer->add_param()->set_name(bias_name);
  }
  return layer;
}

LayerParameter steps_concat(const std::string& output) {
  LayerParameter concat;
  concat.set_name(output + "_concat");
  concat.set_type("Concat");
  concat.add_top(output);
  concat.mutable_concat_param()->set_axis(0);
  return concat;
}

RecurrentLayer::StepSlices RecurrentLayer::add_input_transforms(NetParameter* net,
                                                                const std::string& g,
                                                                int width) const {
  const RecurrentParameter& recurrent = param_.recurrent_param();
  const std::string w_x = "W_x" + g;
  LayerParameter* cont_slice = add_unrolled_layer(net, "cont_slice", "Slice", {"cont"}, {});
  cont_slice->mutable_slice_param()->set_axis(0);
  add_shared_inner_product(net, recurrent, "x_transform", "x", w_x + "_x", width, 2, w_x, "b_" + g);
  if (static_input()) {
    add_shared_inner_product(net, recurrent, w_x + "_x_static", "x_static",
                             w_x + "_x_static_preshape", width, 1, w_x + "_static");
    LayerParameter* reshape = add_unrolled_layer(net, w_x + "_x_static_reshape", "Reshape",
                                                 {w_x + "_x_static_preshape"}, {w_x + "_x_static"});
    BlobShape* shape = reshape->mutable_reshape_param()->mutable_shape();
    shape->add_dim(1);
    shape->add_dim(-1);
    shape->add_dim(width);
  }
  LayerParameter* x_slice = add_unrolled_layer(net, w_x + "_x_slice", "Slice", {w_x + "_x"}, {});
  x_slice->mutable_slice_param()->set_axis(0);
  return {cont_slice, x_slice};
}

void RecurrentLayer::add_step_input(NetParameter* net, const StepSlices& slices, int t,
                                    const std::string& g, int width,
                                    const StepInputNames& names) const {
  const std::string now = std::to_string(t);
  const std::string before = std::to_string(t - 1);
  const std::string w_x_x = "W_x" + g + "_x";
  const std::string w_h_h = "W_h" + g + "_h_" + before;
  slices.cont->add_top("cont_" + now);
  slices.x->add_top(w_x_x + "_" + now);
  add_unrolled_layer(net, "h_conted_" + before, "Scale", {"h_" + before, "cont_" + now},
                     {"h_conted_" + before})
      ->mutable_scale_param()
      ->set_axis(0);
  add_shared_inner_product(net, param_.recurrent_param(), names.transform, "h_conted_" + before,
                           w_h_h, width, 2, "W_h" + g);
  std::vector<std::string> sum = {w_h_h, w_x_x + "_" + now};
  if (static_input()) sum.push_back(w_x_x + "_static");
  add_unrolled_layer(net, names.sum, "Eltwise", sum, {names.sum_top});
}

int RecurrentLayer::exposed_state_count() const {
  return param_.recurrent_param().expose_hidden() ? static_cast<int>(state_input_names().size())
                                                  : 0;
}

void RecurrentLayer::check_shapes(const BlobVec& bottom) const {
  const Blob& x = *bottom[0];
  const Blob& cont = *bottom[1];
  XTRAIN_CHECK(x.num_axes() >= 2, where(), ": x (bottom[0]) is ", x.shape_string(),
               "; it must be T x N x ... (time steps, streams, features)");
  XTRAIN_CHECK(cont.num_axes() == 2 && cont.shape(0) == x.shape(0) && cont.shape(1) == x.shape(1),
               where(), ": cont (bottom[1]) is ", cont.shape_string(), "; with x ",
               x.shape_string(), " it must be ", x.shape(0), " x ", x.shape(1),
               " (one 0/1 per time step and stream)");
  if (static_input_) {
    const Blob& x_static = *bottom[2];
    XTRAIN_CHECK(x_static.num_axes() >= 1 && x_static.shape(0) == x.shape(1), where(),
                 ": x_static (bottom[2]) is ", x_static.shape_string(), "; it must be ", x.shape(1),
                 " x ... (one row per stream of x ", x.shape_string(), ")");
  }
  for (int k = 0; k < exposed_state_count(); ++k) {
    const Blob& state = *bottom[first_state_bottom() + k];
    const std::vector<int> expected = {1, x.shape(1), num_output()};
    XTRAIN_CHECK(state.shape() == expected, where(), ": the initial state '",
                 state_input_names()[k], "' (bottom[", first_state_bottom() + k, "]) is ",
                 state.shape_string(), "; it must be 1 x ", x.shape(1), " x ", num_output(),
                 " (1 x streams x num_output)");
  }
}

bool recurrent_fused_from_environment() {
  const char* value = std::getenv("XTRAIN_RECURRENT");
  if (value == nullptr || *value == '\0') return true;
  const std::string choice(value);
  if (choice == "fused") return true;
  if (choice == "unrolled") return false;
  throw Error("XTRAIN_RECURRENT=" + choice +
              " is not an implementation of the recurrent layers; use 'fused' (the default: all "
              "steps inside the layer) or 'unrolled' (Caffe's unrolled net, the reference)");
}

NetParameter RecurrentLayer::unrolled_net_param(const BlobVec& bottom) const {
  NetParameter net;
  net.set_name(name());
  net.set_force_backward(true);
  net.mutable_state()->set_phase(phase());

  LayerParameter* inputs = net.add_layer();
  inputs->set_name("inputs");
  inputs->set_type("Input");
  const char* input_names[] = {"x", "cont", "x_static"};
  for (int b = 0; b < 2 + (static_input_ ? 1 : 0); ++b) {
    inputs->add_top(input_names[b]);
    *inputs->mutable_input_param()->add_shape() = shape_of(*bottom[b]);
  }

  LayerParameter* states = net.add_layer();
  states->set_name("states");
  states->set_type("Input");
  BlobShape state_shape;
  state_shape.add_dim(1);
  state_shape.add_dim(streams_);
  state_shape.add_dim(num_output());
  *states->mutable_input_param()->add_shape() = state_shape;
  for (const std::string& state : state_input_names()) states->add_top(state);

  add_unrolled_layers(&net);
  // The unrolled layers compute in this layer's precision.
  const auto as_type = [](NumberType type) {
    return type == NumberType::kFloat16    ? FLOAT16
           : type == NumberType::kBfloat16 ? BFLOAT16
                                           : FLOAT;
  };
  if (!precision().is_float32()) {
    net.set_default_forward_type(as_type(precision().forward_type));
    net.set_default_backward_type(as_type(precision().backward_type));
    net.set_default_forward_math(as_type(precision().forward_math));
    net.set_default_backward_math(as_type(precision().backward_math));
  }

  if (expose_hidden_) {
    // A copy of each final state that the layer's top can take a gradient
    // through; the states themselves may feed later steps' layers.
    for (const std::string& state : state_output_names()) {
      LayerParameter* expose = net.add_layer();
      expose->set_name(state + "_expose");
      expose->set_type("Split");
      expose->add_bottom(state);
      expose->add_top(state + "_exposed");
    }
  }
  if (!name().empty()) {
    for (LayerParameter& layer : *net.mutable_layer()) layer.set_name(name() + "_" + layer.name());
  }
  return net;
}

void RecurrentLayer::layer_setup(const BlobVec& bottom, const BlobVec& top) {
  (void)top;
  XTRAIN_CHECK(num_output() > 0, where(),
               " needs recurrent_param { num_output: ... } (the hidden state's size), > 0");
  expose_hidden_ = param_.recurrent_param().expose_hidden();
  static_input_ = static_cast<int>(bottom.size()) > 2 + exposed_state_count();
  check_shapes(bottom);
  time_steps_ = bottom[0]->shape(0);
  streams_ = bottom[0]->shape(1);

  const bool fused = recurrent_fused_from_environment() && precision().is_float32() &&
                     !param_.recurrent_param().debug_info();
  if (fused) {
    setup_fused(bottom);
  } else {
    setup_unrolled(bottom);
  }
}

// The parameters are those of the unrolled net, built and dropped (its
// blobs' memory is allocated on first use, so this costs little), so the
// same seed gives the same initial weights as the unrolled implementation
// (the layers' seeds follow their index in the net, which Splits shift).
void RecurrentLayer::setup_fused(const BlobVec& bottom) {
  NetOptions options;
  options.device = device();
  options.random_seed = derive_seed(random().engine()(), "unrolled net", 0);
  options.fuse_layers = false;
  options.share_kept_copies = false;
  options.channel_blocked_activations = false;
  std::unique_ptr<Net> unrolled;
  try {
    unrolled = std::make_unique<Net>(unrolled_net_param(bottom), options);
  } catch (const Error& error) {
    throw Error(where() + ": in its unrolled net: " + error.what());
  }
  unrolled_.reset();
  blobs_.clear();
  const auto& params = unrolled->params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (unrolled->param_owners()[i] < 0) blobs_.push_back(params[i]);
  }
  param_propagate_down_.assign(blobs_.size(), true);
  fused_ = make_fused();
  fused_initial_.clear();
  fused_final_.clear();
  for (std::size_t k = 0; k < state_input_names().size(); ++k) {
    fused_initial_.push_back(std::make_unique<Blob>(std::vector<int>{1, streams_, num_output()}));
    fused_final_.push_back(std::make_unique<Blob>(std::vector<int>{1, streams_, num_output()}));
    fill_zero(device(), *fused_final_.back(), /*data=*/true);
  }
}

void RecurrentLayer::setup_unrolled(const BlobVec& bottom) {
  fused_.reset();
  NetOptions options;
  options.device = device();
  options.verbose = param_.recurrent_param().debug_info();
  options.random_seed = derive_seed(random().engine()(), "unrolled net", 0);
  options.fuse_layers = false;
  options.share_kept_copies = false;
  options.channel_blocked_activations = false;
  try {
    unrolled_ = std::make_unique<Net>(unrolled_net_param(bottom), options);
  } catch (const Error& error) {
    throw Error(where() + ": in its unrolled net: " + error.what());
  }

  x_ = unrolled_->blob_by_name("x").get();
  cont_ = unrolled_->blob_by_name("cont").get();
  x_static_ = static_input_ ? unrolled_->blob_by_name("x_static").get() : nullptr;
  state_inputs_.clear();
  state_outputs_.clear();
  exposed_states_.clear();
  for (const std::string& state : state_input_names()) {
    state_inputs_.push_back(unrolled_->blob_by_name(state).get());
  }
  for (const std::string& state : state_output_names()) {
    state_outputs_.push_back(unrolled_->blob_by_name(state).get());
    if (expose_hidden_) {
      exposed_states_.push_back(unrolled_->blob_by_name(state + "_exposed").get());
    }
  }
  output_ = unrolled_->blob_by_name(output_name()).get();
  unused_gradients_.clear();
  for (int b = 0; b < static_cast<int>(bottom.size()); ++b) {
    unused_gradients_.push_back(std::make_unique<Blob>());
  }

  // One copy of each parameter: the blobs owned by the layers of the first
  // step that uses them, in Caffe's order.
  blobs_.clear();
  const auto& params = unrolled_->params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (unrolled_->param_owners()[i] < 0) blobs_.push_back(params[i]);
  }
  param_propagate_down_.assign(blobs_.size(), true);
  zero_state_outputs(/*data=*/true);
}

void RecurrentLayer::reshape(const BlobVec& bottom, const BlobVec& top) {
  check_shapes(bottom);
  XTRAIN_CHECK(bottom[0]->shape(0) == time_steps_, where(), ": x (bottom[0]) is ",
               bottom[0]->shape_string(), " but the layer was set up for ", time_steps_,
               " time steps; the unrolled net cannot change T (rebuild the net)");
  const bool streams_changed = bottom[0]->shape(1) != streams_;
  streams_ = bottom[0]->shape(1);
  if (fused_) {
    top[0]->reshape({time_steps_, streams_, num_output()});
    for (int k = 0; k < exposed_state_count(); ++k) {
      top[1 + k]->reshape({1, streams_, num_output()});
    }
    for (std::size_t k = 0; k < fused_final_.size(); ++k) {
      fused_initial_[k]->reshape({1, streams_, num_output()});
      fused_final_[k]->reshape({1, streams_, num_output()});
      // A state of other streams means nothing to these: start from zero.
      if (streams_changed) fill_zero(device(), *fused_final_[k], /*data=*/true);
    }
    return;
  }
  x_->reshape_like(*bottom[0]);
  cont_->reshape_like(*bottom[1]);
  if (static_input_) x_static_->reshape_like(*bottom[2]);
  for (Blob* state : state_inputs_) state->reshape({1, streams_, num_output()});
  unrolled_->reshape();
  // A state of other streams means nothing to these: start from zero.
  if (streams_changed) zero_state_outputs(/*data=*/true);
  top[0]->reshape_like(*output_);
  for (std::size_t k = 0; k < exposed_states_.size(); ++k) {
    top[1 + k]->reshape_like(*exposed_states_[k]);
  }
  connect_blobs(bottom, top);
}

// Makes the unrolled net read the bottoms and write the tops in place. Done
// again before every pass: the outer net may give the bottoms and tops other
// storage after setup (its memory plan), and a TEST net that shares the
// TRAIN net's weights gives this layer's blobs the TRAIN storage, which the
// unrolled net's sharing layers must follow.
void RecurrentLayer::connect_blobs(const BlobVec& bottom, const BlobVec& top) {
  x_->share_data(*bottom[0]);
  cont_->share_data(*bottom[1]);
  if (static_input_) x_static_->share_data(*bottom[2]);
  for (std::size_t k = 0; k < exposed_states_.size(); ++k) {
    state_inputs_[k]->share_data(*bottom[first_state_bottom() + k]);
  }
  top[0]->share_data(*output_);
  top[0]->share_diff(*output_);
  for (std::size_t k = 0; k < exposed_states_.size(); ++k) {
    top[1 + k]->share_data(*exposed_states_[k]);
    top[1 + k]->share_diff(*exposed_states_[k]);
  }
  const auto& params = unrolled_->params();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int owner = unrolled_->param_owners()[i];
    if (owner < 0) continue;
    params[i]->share_data(*params[owner]);
    params[i]->share_diff(*params[owner]);
  }
}

void RecurrentLayer::zero_state_outputs(bool data) const {
  for (Blob* state : state_outputs_) fill_zero(device(), *state, data);
}

RecurrentPass RecurrentLayer::fused_pass(const BlobVec& bottom) const {
  RecurrentPass pass;
  pass.steps = time_steps_;
  pass.streams = streams_;
  pass.hidden = num_output();
  const int rows = time_steps_ * streams_;
  pass.input_size = rows == 0 ? 0 : bottom[0]->count() / rows;
  pass.static_size = static_input_ && streams_ > 0 ? bottom[2]->count() / streams_ : 0;
  pass.params = &blobs_;
  for (std::size_t i = 0; i < blobs_.size(); ++i) {
    pass.param_propagate_down.push_back(param_propagate_down(static_cast<int>(i)));
  }
  return pass;
}

void RecurrentLayer::forward_fused(const BlobVec& bottom, const BlobVec& top) {
  const Device& on = device();
  RecurrentPass pass = fused_pass(bottom);
  if (pass.steps == 0 || pass.streams == 0) return;
  pass.x = ops::data_on(on, *bottom[0]);
  pass.cont = ops::data_on(on, *bottom[1]);
  if (static_input_) pass.x_static = ops::data_on(on, *bottom[2]);
  pass.output = ops::mutable_data_on(on, *top[0]);
  for (std::size_t k = 0; k < fused_final_.size(); ++k) {
    if (expose_hidden_) {
      pass.initial_states.push_back(ops::data_on(on, *bottom[first_state_bottom() + k]));
      pass.final_states.push_back(ops::mutable_data_on(on, *top[1 + k]));
    } else {
      // Continue from where the previous forward ended.
      float* initial = ops::mutable_data_on(on, *fused_initial_[k]);
      copy_on(on, fused_initial_[k]->count(), ops::data_on(on, *fused_final_[k]), initial);
      pass.initial_states.push_back(initial);
      pass.final_states.push_back(ops::mutable_data_on(on, *fused_final_[k]));
    }
  }
  fused_->forward(on, pass);
}

void RecurrentLayer::backward_fused(const BlobVec& top, const std::vector<bool>& propagate_down,
                                    const BlobVec& bottom) {
  const Device& on = device();
  RecurrentPass pass = fused_pass(bottom);
  if (pass.steps == 0 || pass.streams == 0) return;
  pass.x = ops::data_on(on, *bottom[0]);
  pass.cont = ops::data_on(on, *bottom[1]);
  if (static_input_) pass.x_static = ops::data_on(on, *bottom[2]);
  pass.output = ops::mutable_data_on(on, *top[0]);
  pass.output_diff = ops::diff_on(on, *top[0]);
  if (propagate_down[0]) pass.x_diff = ops::mutable_diff_on(on, *bottom[0]);
  if (static_input_ && propagate_down[2]) pass.x_static_diff = ops::mutable_diff_on(on, *bottom[2]);
  for (std::size_t k = 0; k < fused_final_.size(); ++k) {
    const int b = first_state_bottom() + static_cast<int>(k);
    if (expose_hidden_) {
      pass.initial_states.push_back(ops::data_on(on, *bottom[b]));
      pass.final_state_diffs.push_back(ops::diff_on(on, *top[1 + k]));
      pass.initial_state_diffs.push_back(propagate_down[b] ? ops::mutable_diff_on(on, *bottom[b])
                                                           : nullptr);
    } else {
      // No gradient crosses from the next forward into this one, nor into
      // the previous.
      pass.initial_states.push_back(ops::data_on(on, *fused_initial_[k]));
      pass.final_state_diffs.push_back(nullptr);
      pass.initial_state_diffs.push_back(nullptr);
    }
  }
  fused_->backward(on, pass);
}

void RecurrentLayer::forward_on(const BlobVec& bottom, const BlobVec& top) {
  if (fused_) {
    forward_fused(bottom, top);
    return;
  }
  connect_blobs(bottom, top);
  if (!expose_hidden_) {
    // Continue from where the previous forward ended.
    for (std::size_t k = 0; k < state_inputs_.size(); ++k) {
      ops::apply_on(device(), state_inputs_[k]->count(), ops::ScaleBy{1.0f},
                    ops::mutable_data_on(device(), *state_inputs_[k]),
                    ops::data_on(device(), *state_outputs_[k]));
    }
  }
  unrolled_->forward();
  if (param_.recurrent_param().debug_info()) log_debug_info(/*backward=*/false);
}

void RecurrentLayer::backward_on(const BlobVec& top, const std::vector<bool>& propagate_down,
                                 const BlobVec& bottom) {
  XTRAIN_CHECK(!propagate_down[1], where(),
               ": cont (bottom[1]) takes no gradient; set propagate_down: false for it");
  if (fused_) {
    backward_fused(top, propagate_down, bottom);
    return;
  }
  connect_blobs(bottom, top);
  // Each input's gradient goes to its bottom if the outer net asked for it,
  // else to a scratch blob: an unasked bottom's diff may be storage that
  // other blobs use.
  const auto route = [&](Blob* inner, int b) {
    if (propagate_down[b]) {
      inner->share_diff(*bottom[b]);
      return;
    }
    unused_gradients_[b]->reshape_like(*inner);
    inner->share_diff(*unused_gradients_[b]);
  };
  route(x_, 0);
  if (static_input_) route(x_static_, 2);
  for (std::size_t k = 0; k < exposed_states_.size(); ++k) {
    route(state_inputs_[k], first_state_bottom() + static_cast<int>(k));
  }
  // No gradient crosses from the next forward into this one.
  if (!expose_hidden_) zero_state_outputs(/*data=*/false);
  unrolled_->backward();
  if (param_.recurrent_param().debug_info()) log_debug_info(/*backward=*/true);
}

// recurrent_param.debug_info: the mean magnitude of what each layer of the
// unrolled net wrote (its tops after forward, its bottoms' gradients after
// backward), as Caffe's debug_info prints for a net.
void RecurrentLayer::log_debug_info(bool backward) const {
  const Net& net = *unrolled_;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    const auto& ids = backward ? net.bottom_id_vecs()[i] : net.top_id_vecs()[i];
    for (std::size_t j = 0; j < ids.size(); ++j) {
      if (backward && !net.bottom_need_backward()[i][j]) continue;
      const Blob& blob = *net.blobs()[ids[j]];
      const double mean = blob.count() == 0 ? 0.0
                                            : (backward ? blob.asum_diff() : blob.asum_data()) /
                                                  static_cast<double>(blob.count());
      XLOG(INFO) << where() << (backward ? " backward " : " forward ") << net.layer_names()[i]
                 << (backward ? " bottom " : " top ") << net.blob_names()[ids[j]]
                 << (backward ? " diff" : " data") << ": " << mean;
    }
  }
}

}  // namespace xtrain

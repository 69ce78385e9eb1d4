#include "xtrain/net.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/activation_packing.hpp"
#include "core/device_memory.hpp"
#include "core/engine_hooks.hpp"
#include "core/nan_settings.hpp"
#include "core/net_name_limits.hpp"
#include "core/net_upgrade.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net_upgrade.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// The entry of `entries` that `index` gives for `name`; an error names the
// net and the `kind` of entry (blob, layer) when it has none of that name.
template <typename Entry>
const Entry& named_entry(const std::vector<Entry>& entries, const std::map<std::string, int>& index,
                         const std::string& name, const char* kind, const std::string& net_name) {
  const auto found = index.find(name);
  XTRAIN_CHECK(found != index.end(), "net '", net_name, "' has no ", kind, " named '", name, "'");
  return entries[static_cast<std::size_t>(found->second)];
}

}  // namespace

Net::Net(const NetParameter& param, const NetOptions& options) : options_(options) { init(param); }

Net::Net(const std::string& prototxt_path, Phase phase, int level,
         const std::vector<std::string>& stages, const NetOptions& options)
    : options_(options) {
  // A number cast to Phase (pycaffe scripts pass caffe_pb2.TEST) may be
  // neither; such a net would drop every layer its phase rules name.
  XTRAIN_CHECK(Phase_IsValid(phase), "the net '", prototxt_path, "' asked for phase ",
               static_cast<int>(phase), ", which is neither TRAIN (0) nor TEST (1)");
  NetParameter param = read_net_params_from_text_file(prototxt_path);
  param.mutable_state()->set_phase(phase);
  param.mutable_state()->set_level(level);
  for (const std::string& stage : stages) param.mutable_state()->add_stage(stage);
  init(param);
}

void Net::init(const NetParameter& in_param) {
  check_name_lengths(in_param);
  check_no_nan_layer_settings(in_param);
  NetParameter upgraded(in_param);
  if (upgrade_net_inputs(&upgraded)) {
    XLOG(WARNING) << "Net '" << upgraded.name()
                  << "' declares inputs with the deprecated input/input_dim fields; "
                     "using an Input layer instead";
  }
  phase_ = upgraded.state().phase();
  const NetParameter param = insert_splits(filter_net(upgraded));
  name_ = param.name();
  if (options_.verbose) {
    XLOG(INFO) << "Initializing net '" << name_ << "' for phase "
               << (phase_ == TRAIN ? "TRAIN" : "TEST");
  }

  // Before any blob exists: host buffers are then page-locked, and a busy or
  // missing GPU is reported before the net is half built.
  use_device(options_.device);
  XTRAIN_CHECK(options_.data_shard.count >= 1 && options_.data_shard.index >= 0 &&
                   options_.data_shard.index < options_.data_shard.count,
               "data shard ", options_.data_shard.index, " of ", options_.data_shard.count,
               " does not exist");

  std::map<std::string, int> blob_name_to_idx;
  std::vector<std::string> available_blobs;
  const int layer_count = param.layer_size();
  bottom_vecs_.resize(layer_count);
  top_vecs_.resize(layer_count);
  bottom_id_vecs_.resize(layer_count);
  top_id_vecs_.resize(layer_count);
  bottom_need_backward_.resize(layer_count);
  param_id_vecs_.resize(layer_count);
  std::size_t memory_used = 0;

  for (int layer_id = 0; layer_id < layer_count; ++layer_id) {
    LayerParameter layer_param = param.layer(layer_id);
    if (!layer_param.has_phase()) layer_param.set_phase(phase_);
    XTRAIN_CHECK(layer_param.propagate_down_size() == 0 ||
                     layer_param.propagate_down_size() == layer_param.bottom_size(),
                 "layer '", layer_param.name(), "' has ", layer_param.propagate_down_size(),
                 " propagate_down values but ", layer_param.bottom_size(),
                 " bottoms; give one per bottom");
    XTRAIN_CHECK(layer_names_index_.count(layer_param.name()) == 0, "two layers are named '",
                 layer_param.name(), "'; layer names must be unique");

    std::shared_ptr<Layer> layer = LayerRegistry::global().create(layer_param);
    layer->set_device(options_.device);
    layer->set_precision(resolve_layer_precision(param, layer_param, options_.precision));
    if (!layer->precision().is_float32()) {
      mixed_precision_ = true;
      if (options_.verbose) {
        XLOG(INFO) << "Layer " << layer_param.name() << " computes in "
                   << layer->precision().to_string();
      }
    }
    layer->set_data_shard(options_.data_shard);
    layer->seed(derive_seed(options_.random_seed, "layer", static_cast<std::uint64_t>(layer_id)));
    layers_.push_back(layer);
    layer_names_.push_back(layer_param.name());
    layer_names_index_[layer_param.name()] = layer_id;
    if (options_.verbose) XLOG(INFO) << "Creating layer " << layer_param.name();

    bool need_backward = false;
    for (int bottom_id = 0; bottom_id < layer_param.bottom_size(); ++bottom_id) {
      const int blob_id =
          append_bottom(param, layer_id, bottom_id, &blob_name_to_idx, &available_blobs);
      need_backward |= blob_need_backward_[blob_id];
    }
    for (int top_id = 0; top_id < layer_param.top_size(); ++top_id) {
      append_top(param, layer_id, top_id, &blob_name_to_idx);
      available_blobs.push_back(layer_param.top(top_id));
    }
    // Layers like Accuracy may get tops the prototxt did not name.
    if (layer->auto_top_blobs()) {
      const int needed = std::max(layer->min_top_blobs(), layer->exact_num_top_blobs());
      for (int top_id = layer_param.top_size(); top_id < needed; ++top_id) {
        auto blob = std::make_shared<Blob>();
        blobs_.push_back(blob);
        blob_names_.push_back("(automatic)");
        blob_need_backward_.push_back(false);
        blob_loss_weights_.push_back(0);
        top_id_vecs_[layer_id].push_back(static_cast<int>(blobs_.size()) - 1);
        top_vecs_[layer_id].push_back(blob.get());
      }
    }

    if (options_.verbose) XLOG(INFO) << "Setting up " << layer_param.name();
    try {
      layer->setup(bottom_vecs_[layer_id], top_vecs_[layer_id]);
    } catch (const Error& error) {
      // Most layers name themselves; a shared helper (Blob's size limit,
      // say) does not know which layer called it.
      const std::string what = error.what();
      if (what.find("'" + layer_param.name() + "'") != std::string::npos) throw;
      throw Error("layer '" + layer_param.name() + "' (" + layer_param.type() + "): " + what);
    }
    for (std::size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
      const int blob_id = top_id_vecs_[layer_id][top_id];
      blob_loss_weights_[blob_id] = layer->loss(static_cast<int>(top_id));
      if (options_.verbose) {
        XLOG(INFO) << "Top shape: " << top_vecs_[layer_id][top_id]->shape_string();
        if (layer->loss(static_cast<int>(top_id)) != 0) {
          XLOG(INFO) << "    with loss weight " << layer->loss(static_cast<int>(top_id));
        }
      }
      memory_used += top_vecs_[layer_id][top_id]->count();
    }
    if (options_.verbose) {
      XLOG(INFO) << "Memory required for data: " << memory_used * sizeof(float);
    }

    // The layer's own copy of its parameter: a layer may add ParamSpecs (as
    // BatchNorm does, to keep the solver off its statistics).
    const LayerParameter& own_param = layer->layer_param();
    const int param_size = own_param.param_size();
    const int num_param_blobs = static_cast<int>(layer->blobs().size());
    XTRAIN_CHECK(param_size <= num_param_blobs, "layer '", layer_param.name(), "' (",
                 layer_param.type(), ") has ", param_size, " param specs but only ",
                 num_param_blobs, " learnable blobs");
    for (int param_id = 0; param_id < num_param_blobs; ++param_id) {
      const ParamSpec spec = param_id < param_size ? own_param.param(param_id) : ParamSpec();
      const bool param_need_backward = spec.lr_mult() != 0;
      need_backward |= param_need_backward;
      layer->set_param_propagate_down(param_id, param_need_backward);
    }
    for (int param_id = 0; param_id < num_param_blobs; ++param_id) {
      append_param(param, layer_id, param_id);
    }
    layer_need_backward_.push_back(need_backward);
    if (need_backward) {
      for (int blob_id : top_id_vecs_[layer_id]) blob_need_backward_[blob_id] = true;
    }
  }

  compute_backward_needs(param);

  // What no layer consumed is the net's output.
  for (const std::string& blob_name : available_blobs) {
    if (options_.verbose) XLOG(INFO) << "This network produces output " << blob_name;
    const int blob_id = blob_name_to_idx[blob_name];
    net_output_blobs_.push_back(blobs_[blob_id].get());
    net_output_blob_indices_.push_back(blob_id);
  }
  for (std::size_t i = 0; i < blob_names_.size(); ++i)
    blob_names_index_[blob_names_[i]] = static_cast<int>(i);
  if (mixed_precision_) {
    assign_top_storage();
    if (!options_.device.is_gpu()) say_once_how_this_cpu_computes_bfloat16();
  }

  // Parameters named alike share one blob (data and gradient).
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (param_owners_[i] < 0) continue;
    params_[i]->share_data(*params_[param_owners_[i]]);
    params_[i]->share_diff(*params_[param_owners_[i]]);
  }
  if (options_.fuse_layers && !options_.device.is_gpu()) fuse_in_place_relus();
  if (options_.share_kept_copies && !options_.device.is_gpu()) share_kept_copies();
  // After the copies are shared: the Scale must read BatchNorm's.
  if (options_.fuse_layers && options_.share_kept_copies && !options_.device.is_gpu()) {
    fuse_batch_norm_scales();
  }
  // Before the memory plan, which keeps blocked and plain blobs apart.
  if (options_.channel_blocked_activations && !options_.device.is_gpu()) {
    arrange_channel_blocked_activations(/*log=*/true);
  }
  if (options_.share_activation_memory) share_activation_memory();
  if (options_.verbose) XLOG(INFO) << "Network initialization done.";
}

int Net::append_bottom(const NetParameter& param, int layer_id, int bottom_id,
                       std::map<std::string, int>* blob_name_to_idx,
                       std::vector<std::string>* available_blobs) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const std::string& blob_name = layer_param.bottom(bottom_id);
  auto available = std::find(available_blobs->begin(), available_blobs->end(), blob_name);
  XTRAIN_CHECK(available != available_blobs->end(), "layer '", layer_param.name(), "' (",
               layer_param.type(), ") reads bottom blob '", blob_name,
               "', which no earlier layer produces (check the spelling, the layer order, and "
               "the include/exclude rules for this phase)");
  const int blob_id = (*blob_name_to_idx)[blob_name];
  if (options_.verbose) XLOG(INFO) << layer_names_[layer_id] << " <- " << blob_name;
  bottom_vecs_[layer_id].push_back(blobs_[blob_id].get());
  bottom_id_vecs_[layer_id].push_back(blob_id);
  available_blobs->erase(available);
  bool need_backward = blob_need_backward_[blob_id];
  if (layer_param.propagate_down_size() > 0) {
    need_backward = need_backward && layer_param.propagate_down(bottom_id);
  }
  bottom_need_backward_[layer_id].push_back(need_backward);
  return blob_id;
}

void Net::append_top(const NetParameter& param, int layer_id, int top_id,
                     std::map<std::string, int>* blob_name_to_idx) {
  const LayerParameter& layer_param = param.layer(layer_id);
  const std::string& blob_name = layer_param.top(top_id);
  // A top named like the bottom at the same position is computed in place.
  const bool in_place =
      top_id < layer_param.bottom_size() && blob_name == layer_param.bottom(top_id);
  if (in_place) {
    if (options_.verbose) XLOG(INFO) << layer_param.name() << " -> " << blob_name << " (in-place)";
    const int blob_id = (*blob_name_to_idx)[blob_name];
    top_vecs_[layer_id].push_back(blobs_[blob_id].get());
    top_id_vecs_[layer_id].push_back(blob_id);
    return;
  }
  XTRAIN_CHECK(blob_name_to_idx->count(blob_name) == 0, "layer '", layer_param.name(),
               "' produces top blob '", blob_name,
               "', which an earlier layer already produces; a top may reuse a name only "
               "in place (as the top at the position of the same-named bottom)");
  if (options_.verbose) XLOG(INFO) << layer_param.name() << " -> " << blob_name;
  auto blob = std::make_shared<Blob>();
  const int blob_id = static_cast<int>(blobs_.size());
  blobs_.push_back(blob);
  blob_names_.push_back(blob_name);
  blob_need_backward_.push_back(false);
  blob_loss_weights_.push_back(0);
  (*blob_name_to_idx)[blob_name] = blob_id;
  top_id_vecs_[layer_id].push_back(blob_id);
  top_vecs_[layer_id].push_back(blob.get());
  // As in Caffe 1.0, the tops of Input layers are the net's inputs.
  if (layer_param.type() == "Input") {
    net_input_blob_indices_.push_back(blob_id);
    net_input_blobs_.push_back(blob.get());
  }
}

void Net::append_param(const NetParameter& param, int layer_id, int param_id) {
  (void)param;
  const LayerParameter& layer_param = layers_[layer_id]->layer_param();
  const ParamSpec spec =
      param_id < layer_param.param_size() ? layer_param.param(param_id) : ParamSpec();
  const std::string& param_name = spec.name();
  const int net_param_id = static_cast<int>(params_.size());
  params_.push_back(layers_[layer_id]->blobs()[param_id]);
  param_id_vecs_[layer_id].push_back(net_param_id);
  param_layer_indices_.emplace_back(layer_id, param_id);
  param_display_names_.push_back(
      param_name.empty() ? layer_param.name() + "/" + std::to_string(param_id) : param_name);

  auto owner = param_name.empty() ? param_names_index_.end() : param_names_index_.find(param_name);
  if (owner == param_names_index_.end()) {
    // This layer owns the blob.
    param_owners_.push_back(-1);
    if (!param_name.empty()) param_names_index_[param_name] = net_param_id;
    learnable_param_ids_.push_back(static_cast<int>(learnable_params_.size()));
    learnable_params_.push_back(params_[net_param_id].get());
    params_lr_.push_back(spec.lr_mult());
    params_weight_decay_.push_back(spec.decay_mult());
    has_params_lr_.push_back(spec.has_lr_mult());
    has_params_decay_.push_back(spec.has_decay_mult());
    return;
  }

  // A name seen before: share the owner's blob.
  const int owner_id = owner->second;
  param_owners_.push_back(owner_id);
  const auto [owner_layer, owner_param] = param_layer_indices_[owner_id];
  const Blob& owner_blob = *layers_[owner_layer]->blobs()[owner_param];
  const Blob& this_blob = *layers_[layer_id]->blobs()[param_id];
  if (spec.share_mode() == ParamSpec::PERMISSIVE) {
    XTRAIN_CHECK(owner_blob.count() == this_blob.count(), "shared parameter '", param_name,
                 "': layer '", layer_names_[owner_layer], "' has ", owner_blob.shape_string(),
                 " but layer '", layer_param.name(), "' has ", this_blob.shape_string(),
                 " (PERMISSIVE sharing needs equal counts)");
  } else {
    XTRAIN_CHECK(owner_blob.shape() == this_blob.shape(), "shared parameter '", param_name,
                 "': layer '", layer_names_[owner_layer], "' has shape ", owner_blob.shape_string(),
                 " but layer '", layer_param.name(), "' has ", this_blob.shape_string(),
                 " (use share_mode: PERMISSIVE to share by count)");
  }
  const int learnable_id = learnable_param_ids_[owner_id];
  learnable_param_ids_.push_back(learnable_id);
  if (spec.has_lr_mult()) {
    XTRAIN_CHECK(!has_params_lr_[learnable_id] || params_lr_[learnable_id] == spec.lr_mult(),
                 "shared parameter '", param_name, "' has different lr_mult values (",
                 params_lr_[learnable_id], " and ", spec.lr_mult(), " in layer '",
                 layer_param.name(), "')");
    params_lr_[learnable_id] = spec.lr_mult();
    has_params_lr_[learnable_id] = true;
  }
  if (spec.has_decay_mult()) {
    XTRAIN_CHECK(
        !has_params_decay_[learnable_id] || params_weight_decay_[learnable_id] == spec.decay_mult(),
        "shared parameter '", param_name, "' has different decay_mult values (",
        params_weight_decay_[learnable_id], " and ", spec.decay_mult(), " in layer '",
        layer_param.name(), "')");
    params_weight_decay_[learnable_id] = spec.decay_mult();
    has_params_decay_[learnable_id] = true;
  }
}

void Net::compute_backward_needs(const NetParameter& param) {
  // Walking from the top: a layer needs backward only if some loss depends on
  // its output and something below it wants a gradient.
  std::set<std::string> blobs_under_loss;
  std::set<std::string> blobs_skip_backward;
  for (int layer_id = static_cast<int>(layers_.size()) - 1; layer_id >= 0; --layer_id) {
    bool contributes_to_loss = false;
    bool skip_propagate_down = true;
    for (std::size_t top_id = 0; top_id < top_vecs_[layer_id].size(); ++top_id) {
      const std::string& blob_name = blob_names_[top_id_vecs_[layer_id][top_id]];
      if (layers_[layer_id]->loss(static_cast<int>(top_id)) != 0 ||
          blobs_under_loss.count(blob_name)) {
        contributes_to_loss = true;
      }
      if (!blobs_skip_backward.count(blob_name)) skip_propagate_down = false;
      if (contributes_to_loss && !skip_propagate_down) break;
    }
    if (layer_need_backward_[layer_id] && skip_propagate_down) {
      layer_need_backward_[layer_id] = false;
      std::fill(bottom_need_backward_[layer_id].begin(), bottom_need_backward_[layer_id].end(),
                false);
    }
    if (!contributes_to_loss) layer_need_backward_[layer_id] = false;
    if (options_.verbose) {
      XLOG(INFO) << layer_names_[layer_id]
                 << (layer_need_backward_[layer_id] ? " needs backward computation."
                                                    : " does not need backward computation.");
    }
    for (std::size_t bottom_id = 0; bottom_id < bottom_vecs_[layer_id].size(); ++bottom_id) {
      const std::string& blob_name = blob_names_[bottom_id_vecs_[layer_id][bottom_id]];
      if (contributes_to_loss) {
        blobs_under_loss.insert(blob_name);
      } else {
        bottom_need_backward_[layer_id][bottom_id] = false;
      }
      if (!bottom_need_backward_[layer_id][bottom_id]) blobs_skip_backward.insert(blob_name);
    }
  }
  if (!param.force_backward()) return;
  for (std::size_t layer_id = 0; layer_id < layers_.size(); ++layer_id) {
    layer_need_backward_[layer_id] = true;
    for (std::size_t bottom_id = 0; bottom_id < bottom_vecs_[layer_id].size(); ++bottom_id) {
      const bool allowed = layers_[layer_id]->allow_force_backward(static_cast<int>(bottom_id));
      bottom_need_backward_[layer_id][bottom_id] =
          bottom_need_backward_[layer_id][bottom_id] || allowed;
      const int blob_id = bottom_id_vecs_[layer_id][bottom_id];
      blob_need_backward_[blob_id] = blob_need_backward_[blob_id] || allowed;
    }
    for (std::size_t param_id = 0; param_id < layers_[layer_id]->blobs().size(); ++param_id) {
      layers_[layer_id]->set_param_propagate_down(static_cast<int>(param_id), true);
    }
  }
}

float Net::forward() {
  float loss = 0;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    loss += layers_[i]->forward(bottom_vecs_[i], top_vecs_[i]);
    if (activation_packing_) activation_packing_->after_forward(static_cast<int>(i));
  }
  return loss;
}

void Net::backward() { backward(nullptr); }

void Net::backward(const std::function<void(int layer)>& layer_done) {
  XTRAIN_CHECK(!(options_.share_activation_memory && phase_ == TEST), "net '", name_,
               "' is a TEST net whose blobs share their data storage "
               "(NetOptions::share_activation_memory), so it runs forward only; build it "
               "without that option to run backward");
  // The loss tops' diffs hold their loss weights, where backward starts
  // (Layer::set_loss_weights): scaled for the pass, written back after it
  // (as weights, not divided, so they stay exact whatever the scale).
  const auto set_loss_diffs = [this](float scale) {
    for (std::size_t b = 0; b < blobs_.size(); ++b) {
      if (blob_loss_weights_[b] == 0 || blobs_[b]->count() == 0) continue;
      float* diff = blobs_[b]->mutable_cpu_diff();
      std::fill_n(diff, blobs_[b]->count(), blob_loss_weights_[b] * scale);
    }
  };
  if (loss_scale_ != 1.0f) set_loss_diffs(loss_scale_);
  struct RestoreLossWeights {
    const decltype(set_loss_diffs)& set;
    bool scaled;
    ~RestoreLossWeights() {
      if (scaled) set(1.0f);
    }
  } restore{set_loss_diffs, loss_scale_ != 1.0f};
  std::vector<int> absorbed_done;
  for (int i = static_cast<int>(layers_.size()) - 1; i >= 0; --i) {
    if (activation_packing_) activation_packing_->before_backward(i);
    if (!recompute_before_backward_.empty()) {
      for (int layer : recompute_before_backward_[i]) {
        mutable_engine_hooks(*layers_[layer])->recompute_top(bottom_vecs_[layer], top_vecs_[layer]);
        if (mixed_precision_) layers_[layer]->store_tops(top_vecs_[layer]);
      }
    }
    if (layer_need_backward_[i]) {
      layers_[i]->backward(top_vecs_[i], bottom_need_backward_[i], bottom_vecs_[i]);
    }
    if (!layer_done) continue;
    // A layer another one took over (a Scale fused into its BatchNorm) has
    // its gradients when that one's backward is done, not before: it is
    // reported right after that one (whose time the report is, for xtrain time).
    if (engine_hooks(*layers_[i]).absorbed_by_previous_layer() && i > 0) {
      absorbed_done.push_back(i);
      continue;
    }
    layer_done(i);
    for (int absorbed : absorbed_done) layer_done(absorbed);
    absorbed_done.clear();
  }
}

float Net::forward_backward() {
  const float loss = forward();
  backward();
  return loss;
}

void Net::reshape() {
  for (std::size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->reshape(bottom_vecs_[i], top_vecs_[i]);
  // New shapes may give a convolution another engine, which may compute in
  // another layout: decide again, so that no layer converts in steady state.
  if (options_.channel_blocked_activations && !options_.device.is_gpu()) {
    arrange_channel_blocked_activations(/*log=*/false);
  }
}

void Net::set_loss_scale(float scale) {
  XTRAIN_CHECK(std::isfinite(scale) && scale > 0, "net '", name_, "': a loss scale of ", scale,
               " cannot scale gradients; give a finite number above 0 (global_grad_scale)");
  loss_scale_ = scale;
}

void Net::clear_param_diffs() {
  for (Blob* blob : learnable_params_) {
    if (blob->count() == 0) continue;
    if (options_.device.is_gpu()) {
      device_memory::zero(blob->mutable_gpu_diff(), blob->count() * sizeof(float),
                          options_.device.id);
    } else {
      std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.0f);
    }
  }
}

void Net::to_proto(NetParameter* param, bool write_diff) const {
  param->Clear();
  param->set_name(name_);
  for (const auto& layer : layers_) layer->to_proto(param->add_layer(), write_diff);
}

bool Net::has_blob(const std::string& name) const { return blob_names_index_.count(name) > 0; }

std::shared_ptr<Blob> Net::blob_by_name(const std::string& name) const {
  return named_entry(blobs_, blob_names_index_, name, "blob", name_);
}

bool Net::has_layer(const std::string& name) const { return layer_names_index_.count(name) > 0; }

std::shared_ptr<Layer> Net::layer_by_name(const std::string& name) const {
  return named_entry(layers_, layer_names_index_, name, "layer", name_);
}

}  // namespace xtrain

#include "xtrain/layer.hpp"

#include "core/cpu_isa.hpp"
#include "core/engine_hooks.hpp"
#include "core/number_rounding.hpp"
#include "core/thread_device_work.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

Layer::Layer(const LayerParameter& param) : param_(param) {
  // Blobs given in the parameter (e.g. by a deploy net with weights) are
  // loaded here; layer_setup() keeps them instead of filling new ones.
  for (const BlobProto& blob_proto : param_.blobs()) {
    auto blob = std::make_shared<Blob>();
    blob->from_proto(blob_proto);
    blobs_.push_back(blob);
  }
}

std::string Layer::where() const { return "layer '" + param_.name() + "' (" + param_.type() + ")"; }

namespace {
std::string blobs_word(int n) { return n == 1 ? " blob" : " blobs"; }
}  // namespace

void Layer::check_blob_counts(const BlobVec& bottom, const BlobVec& top) const {
  const int bottoms = static_cast<int>(bottom.size());
  const int tops = static_cast<int>(top.size());
  if (exact_num_bottom_blobs() >= 0) {
    XTRAIN_CHECK(bottoms == exact_num_bottom_blobs(), where(), " takes exactly ",
                 exact_num_bottom_blobs(), " bottom", blobs_word(exact_num_bottom_blobs()),
                 ", but ", bottoms, " given");
  }
  if (min_bottom_blobs() >= 0) {
    XTRAIN_CHECK(bottoms >= min_bottom_blobs(), where(), " takes at least ", min_bottom_blobs(),
                 " bottom", blobs_word(min_bottom_blobs()), ", but ", bottoms, " given");
  }
  if (max_bottom_blobs() >= 0) {
    XTRAIN_CHECK(bottoms <= max_bottom_blobs(), where(), " takes at most ", max_bottom_blobs(),
                 " bottom", blobs_word(max_bottom_blobs()), ", but ", bottoms, " given");
  }
  if (exact_num_top_blobs() >= 0) {
    XTRAIN_CHECK(tops == exact_num_top_blobs(), where(), " produces exactly ",
                 exact_num_top_blobs(), " top", blobs_word(exact_num_top_blobs()), ", but ", tops,
                 " given");
  }
  if (min_top_blobs() >= 0) {
    XTRAIN_CHECK(tops >= min_top_blobs(), where(), " produces at least ", min_top_blobs(), " top",
                 blobs_word(min_top_blobs()), ", but ", tops, " given");
  }
  if (max_top_blobs() >= 0) {
    XTRAIN_CHECK(tops <= max_top_blobs(), where(), " produces at most ", max_top_blobs(), " top",
                 blobs_word(max_top_blobs()), ", but ", tops, " given");
  }
  if (equal_num_bottom_top_blobs()) {
    XTRAIN_CHECK(bottoms == tops, where(), " needs as many tops as bottoms, but has ", bottoms,
                 " bottoms and ", tops, " tops");
  }
}

void Layer::setup(const BlobVec& bottom, const BlobVec& top) {
  // Before any layer makes a oneDNN primitive (in a Net or alone):
  // XTRAIN_MAX_CPU_ISA's cap on oneDNN only takes before oneDNN starts.
  cpu_isa();
  check_blob_counts(bottom, top);
  layer_setup(bottom, top);
  reshape(bottom, top);
  // Every built-in layer shapes its tops; a Python or plugin layer that
  // forgets would leave a top without memory for the layers after it.
  for (std::size_t i = 0; i < top.size(); ++i) {
    XTRAIN_CHECK(top[i]->data_memory() != nullptr, where(), " gave top ", i,
                 " no shape: its reshape must give every top one (in a Python layer, "
                 "top[",
                 i, "].reshape(...))");
  }
  set_loss_weights(top);
}

void Layer::set_loss_weights(const BlobVec& top) {
  const int weights = param_.loss_weight_size();
  if (weights == 0) return;
  XTRAIN_CHECK(weights == static_cast<int>(top.size()), where(), " has ", weights,
               " loss_weight values but ", top.size(),
               " tops; give one loss_weight per top (0 for tops that are not losses)");
  for (int i = 0; i < weights; ++i) {
    const float weight = param_.loss_weight(i);
    if (weight == 0) continue;
    set_loss(i, weight);
    // The top's diff holds the weight: backward then starts from it, and the
    // loss is the dot product of data and diff.
    float* diff = top[i]->mutable_cpu_diff();
    for (std::size_t j = 0; j < top[i]->count(); ++j) diff[j] = weight;
  }
}

namespace {

bool is_data_of_any(const std::shared_ptr<SyncedMemory>& memory, const BlobVec& blobs) {
  for (const Blob* blob : blobs) {
    if (blob->data_memory() == memory) return true;
  }
  return false;
}

bool is_diff_of_any(const std::shared_ptr<SyncedMemory>& memory, const BlobVec& blobs) {
  for (const Blob* blob : blobs) {
    if (blob->diff_memory() == memory) return true;
  }
  return false;
}

// Storage that the Net's memory plan shares may still be marked
// channel-blocked by the blob that used it last, while the blob now using it
// is plain. What it holds is dead (the plan shares only storage whose next
// use overwrites it), so it is marked plain without the conversion that the
// plain accessors would otherwise make.
void forget_dead_blocked_layout(const std::shared_ptr<SyncedMemory>& memory) {
  if (memory->host_layout() == MemoryLayout::kChannelBlocked) {
    memory->overwrite_host_as(MemoryLayout::kPlain);
  }
}

// Forward overwrites every top that is not also a bottom (or a view of one);
// a top the layer does not write blocked is about to be written plain.
void forget_dead_layouts_before_forward(const EngineHooks& hooks, const BlobVec& bottom,
                                        const BlobVec& top) {
  for (std::size_t t = 0; t < top.size(); ++t) {
    if (hooks.writes_channel_blocked_top(static_cast<int>(t))) continue;
    const std::shared_ptr<SyncedMemory>& memory = top[t]->data_memory();
    if (!is_data_of_any(memory, bottom)) forget_dead_blocked_layout(memory);
  }
}

// Backward overwrites the gradient of every bottom it propagates to that is
// not also a top; layers that compute blocked write it in the layout of the
// bottom's values, the others plain.
void forget_dead_layouts_before_backward(const BlobVec& top,
                                         const std::vector<bool>& propagate_down,
                                         const BlobVec& bottom) {
  for (std::size_t b = 0; b < bottom.size(); ++b) {
    if (!propagate_down[b] || bottom[b]->data_layout() == MemoryLayout::kChannelBlocked) continue;
    const std::shared_ptr<SyncedMemory>& memory = bottom[b]->diff_memory();
    if (!is_diff_of_any(memory, top)) forget_dead_blocked_layout(memory);
  }
}

}  // namespace

// A built-in layer's engine state (the ReLU a layer before absorbed, the
// tops it writes blocked) is in its EngineHooks, found per call: a
// dynamic_cast costs nanoseconds against a layer's forward.
float Layer::forward(const BlobVec& bottom, const BlobVec& top) {
  const EngineHooks& hooks = engine_hooks(*this);
  if (hooks.absorbed_by_previous_layer()) return 0.0f;
  const RunningLayer running(name(), type(), "forward");  // for an out-of-memory error
  reshape(bottom, top);
  if (device_.is_gpu()) {
    forward_gpu(bottom, top);
  } else {
    forget_dead_layouts_before_forward(hooks, bottom, top);
    forward_cpu(bottom, top);
  }
  if (precision_.forward_type != NumberType::kFloat32 && round_tops_) store_tops(top);
  double loss = 0;
  for (std::size_t i = 0; i < top.size(); ++i) {
    if (this->loss(static_cast<int>(i)) == 0) continue;
    const float* data = top[i]->cpu_data();
    const float* weights = top[i]->cpu_diff();
    for (std::size_t j = 0; j < top[i]->count(); ++j)
      loss += static_cast<double>(data[j]) * weights[j];
  }
  return static_cast<float>(loss);
}

void Layer::backward(const BlobVec& top, const std::vector<bool>& propagate_down,
                     const BlobVec& bottom) {
  if (engine_hooks(*this).absorbed_by_previous_layer()) return;
  const RunningLayer running(name(), type(), "backward");
  if (device_.is_gpu()) {
    backward_gpu(top, propagate_down, bottom);
  } else {
    forget_dead_layouts_before_backward(top, propagate_down, bottom);
    backward_cpu(top, propagate_down, bottom);
  }
  if (precision_.backward_type != NumberType::kFloat32 && round_gradients_) {
    store_gradients(propagate_down, bottom);
  }
}

namespace {

// A blob's values or gradient rounded to `type` where they live: on the GPU
// for a GPU layer, else in the host copy as it is laid out (rounding is
// elementwise, so a channel-blocked copy needs no conversion).
void round_data(const Device& device, NumberType type, Blob& blob) {
  if (blob.count() == 0) return;
  float* values = device.is_gpu()
                      ? blob.mutable_gpu_data()
                      : static_cast<float*>(blob.data_memory()->mutable_cpu_data_as_stored());
  round_in_place(device, type, values, blob.count());
}

void round_diff(const Device& device, NumberType type, Blob& blob) {
  if (blob.count() == 0) return;
  float* values = device.is_gpu()
                      ? blob.mutable_gpu_diff()
                      : static_cast<float*>(blob.diff_memory()->mutable_cpu_data_as_stored());
  round_in_place(device, type, values, blob.count());
}

}  // namespace

void Layer::set_precision(const LayerPrecision& precision) { precision_ = precision; }

NumberType Layer::top_storage(int top_index) const {
  if (top_index >= 0 && top_index < static_cast<int>(top_storage_.size())) {
    return top_storage_[static_cast<std::size_t>(top_index)];
  }
  return precision_.forward_type;
}

namespace {
NumberType type_at(const std::vector<NumberType>& types, int index) {
  if (index >= 0 && index < static_cast<int>(types.size())) {
    return types[static_cast<std::size_t>(index)];
  }
  return NumberType::kFloat32;
}
}  // namespace

NumberType Layer::bottom_arrives_in(int bottom_index) const {
  return type_at(bottom_arrival_, bottom_index);
}

NumberType Layer::top_gradient_arrives_in(int top_index) const {
  return type_at(top_gradient_arrival_, top_index);
}

void Layer::store_tops(const BlobVec& top) {
  for (std::size_t i = 0; i < top.size(); ++i) {
    const NumberType type = top_storage(static_cast<int>(i));
    if (type != NumberType::kFloat32) round_data(device_, type, *top[i]);
  }
}

void Layer::store_gradients(const std::vector<bool>& propagate_down, const BlobVec& bottom) {
  const NumberType type = precision_.backward_type;
  for (std::size_t i = 0; i < bottom.size(); ++i) {
    if (i < propagate_down.size() && propagate_down[i]) round_diff(device_, type, *bottom[i]);
  }
  for (std::size_t i = 0; i < blobs_.size(); ++i) {
    if (param_propagate_down(static_cast<int>(i))) round_diff(device_, type, *blobs_[i]);
  }
}

bool Layer::param_propagate_down(int i) const {
  return i >= 0 && i < static_cast<int>(param_propagate_down_.size()) && param_propagate_down_[i];
}

void Layer::set_param_propagate_down(int i, bool value) {
  if (static_cast<int>(param_propagate_down_.size()) <= i) {
    param_propagate_down_.resize(i + 1, true);
  }
  param_propagate_down_[i] = value;
}

float Layer::loss(int top_index) const {
  return top_index < static_cast<int>(loss_.size()) ? loss_[top_index] : 0.0f;
}

void Layer::set_loss(int top_index, float weight) {
  if (static_cast<int>(loss_.size()) <= top_index) loss_.resize(top_index + 1, 0.0f);
  loss_[top_index] = weight;
}

void Layer::to_proto(LayerParameter* param, bool write_diff) const {
  *param = param_;
  param->clear_blobs();
  for (const auto& blob : blobs_) blob->to_proto(param->add_blobs(), write_diff);
}

void Layer::save_resume_state(LayerResumeState* state) const {
  state->set_name(name());
  state->set_random_state(random_.state());
}

void Layer::restore_resume_state(const LayerResumeState& state) {
  if (state.has_random_state()) random_.set_state(state.random_state());
}

}  // namespace xtrain

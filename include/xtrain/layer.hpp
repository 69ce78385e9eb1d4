// Layer: the unit of computation of a Net.
//
// A layer reads its bottom blobs and writes its top blobs (forward), and turns
// the gradients in its tops' diffs into gradients for its bottoms and its
// learnable parameters (backward). Subclasses implement reshape() and the
// forward/backward kernels; the base class does the bookkeeping every layer
// shares: checking the number of blobs, loss weights, and device dispatch.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/device.hpp"
#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

using BlobVec = std::vector<Blob*>;

// Data-parallel training: a net that is replica `index` of `count` computes
// one slice of every global batch, the one of items [index * B, (index + 1)
// * B) where B is its own batch size. Its data layers read only those
// records, and layers that draw random numbers per item (Dropout) draw them
// by global item, so that `count` replicas with batch B compute what one net
// with batch count * B computes.
struct XTRAIN_API DataShard {
  int index = 0;
  int count = 1;
};

// An activation's values that a layer keeps from forward for backward, in
// the layout they were written in (see Layer::kept_top_copy).
struct XTRAIN_API KeptActivation {
  std::vector<float> values;
  MemoryLayout layout = MemoryLayout::kPlain;
};

class XTRAIN_API Layer {
 public:
  explicit Layer(const LayerParameter& param);
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Checks the blob counts, runs layer_setup() and reshape(), and sets up the
  // loss weights of the tops. Called once, by the Net, before any forward.
  void setup(const BlobVec& bottom, const BlobVec& top);

  // One-time initialisation: read parameters, create and fill learnable blobs.
  virtual void layer_setup(const BlobVec& bottom, const BlobVec& top) {
    (void)bottom;
    (void)top;
  }
  // Shapes the tops (and internal buffers) from the bottoms' shapes.
  virtual void reshape(const BlobVec& bottom, const BlobVec& top) = 0;

  // Computes the tops and returns this layer's weighted loss (0 if none).
  float forward(const BlobVec& bottom, const BlobVec& top);
  // propagate_down[i]: whether bottom[i] needs a gradient.
  void backward(const BlobVec& top, const std::vector<bool>& propagate_down, const BlobVec& bottom);

  virtual const char* type() const = 0;
  const std::string& name() const { return param_.name(); }
  const LayerParameter& layer_param() const { return param_; }
  Phase phase() const { return param_.phase(); }

  // Learnable parameters (weights, biases, ...), in the order Caffe stores them.
  std::vector<std::shared_ptr<Blob>>& blobs() { return blobs_; }
  const std::vector<std::shared_ptr<Blob>>& blobs() const { return blobs_; }

  // Whether backward should compute the gradient of learnable blob i.
  bool param_propagate_down(int i) const;
  void set_param_propagate_down(int i, bool value);

  float loss(int top_index) const;
  void set_loss(int top_index, float weight);

  // Blob-count constraints; -1 means "no constraint".
  virtual int exact_num_bottom_blobs() const { return -1; }
  virtual int min_bottom_blobs() const { return -1; }
  virtual int max_bottom_blobs() const { return -1; }
  virtual int exact_num_top_blobs() const { return -1; }
  virtual int min_top_blobs() const { return -1; }
  virtual int max_top_blobs() const { return -1; }
  virtual bool equal_num_bottom_top_blobs() const { return false; }
  // If true, the Net creates anonymous tops up to the minimum count.
  virtual bool auto_top_blobs() const { return false; }
  // Whether force_backward may ask for the gradient of bottom i (e.g. not for
  // labels).
  virtual bool allow_force_backward(int bottom_index) const {
    (void)bottom_index;
    return true;
  }

  // Fusion of an in-place ReLU (negative_slope 0) into the layer just before
  // it, which the Net asks for on the CPU: a layer that computes its top in
  // place may take the ReLU over, applying it as it writes its top and
  // masking the top's gradient as it reads it, which saves the ReLU's two
  // sweeps over memory with bit-identical results. Returns whether it did.
  virtual bool absorb_following_relu() { return false; }
  // Marks a layer whose work the layer before it does (see above): its
  // forward and backward then do nothing.
  void set_absorbed_by_previous_layer() { absorbed_ = true; }
  bool absorbed_by_previous_layer() const { return absorbed_; }

  // Channel-blocked activations (MemoryLayout::kChannelBlocked, oneDNN's
  // nChw16c or nChw8c), which the Net arranges on the CPU between layers
  // that compute in that layout, saving the reorders at each boundary.
  // Results are the same in either layout.
  // Whether the layer reads bottom i in either layout, looking at its
  // storage's layout as it goes (for an in-place layer: and writes it back
  // in that layout).
  virtual bool reads_channel_blocked_bottom(int bottom_index) const {
    (void)bottom_index;
    return false;
  }
  // Whether the layer can write top i (not in place) channel-blocked when
  // the bottoms marked in `blocked_bottoms` arrive blocked.
  virtual bool can_write_channel_blocked_top(int top_index,
                                             const std::vector<bool>& blocked_bottoms) const {
    (void)top_index;
    (void)blocked_bottoms;
    return false;
  }
  // A layer whose tops are views of its bottom's data (Split): the Net then
  // lets the bottom be blocked only if every reader of every top reads it.
  virtual bool tops_share_bottom_data() const { return false; }
  // A layer that computes all its blobs in one layout (Eltwise, Concat,
  // BatchNorm or Scale out of place): the Net keeps its bottoms plain unless
  // its top ends up blocked too, so that it never converts a bottom.
  virtual bool computes_in_one_layout() const { return false; }
  // Set by the Net for the tops it lets the layer write blocked: every
  // reader of the top reads_channel_blocked_bottom.
  void set_channel_blocked_tops(std::vector<bool> tops) { channel_blocked_tops_ = std::move(tops); }
  bool writes_channel_blocked_top(int top_index) const {
    return top_index < static_cast<int>(channel_blocked_tops_.size()) &&
           channel_blocked_tops_[top_index];
  }

  // One copy where two layers kept the same values (the Net asks for it on
  // the CPU, NetOptions::share_kept_copies). A layer that keeps a copy of
  // its top as forward wrote it until its own backward (BatchNorm with batch
  // statistics keeps its output) offers it here, else null.
  virtual std::shared_ptr<KeptActivation> kept_top_copy() { return nullptr; }
  // An in-place layer that keeps a copy of its bottom for backward (Scale)
  // may read `copy` instead: the Net offers it only when the layer just
  // before wrote this bottom and kept `copy` of it, so `copy` holds the
  // values this layer reads, unchanged until that layer's backward, which
  // runs after this one's. `copy` is in the layout the bottom arrives in
  // when both layers read_channel_blocked_bottom alike. Returns whether the
  // layer took it (and dropped its own).
  virtual bool use_kept_bottom_copy(std::shared_ptr<KeptActivation> copy) {
    (void)copy;
    return false;
  }

  // A layer that can write its top's values again says true: in place, from
  // what it keeps for backward (Scale after a BatchNorm whose copy it reads:
  // top = scale * copy + bias, then its absorbed ReLU); otherwise from its
  // bottoms, which the Net makes hold their forward values again first
  // (an Eltwise sum). The memory plan of a CPU training net may then let
  // the top's storage serve other blobs between the last forward use and
  // the first backward use, and the Net calls recompute_top() just before
  // that backward: same function, same inputs, so the same bits as forward
  // wrote.
  virtual bool can_recompute_top() const { return false; }
  virtual void recompute_top(const std::vector<Blob*>& bottom, const std::vector<Blob*>& top) {
    (void)bottom;
    (void)top;
  }

  // Whether backward_cpu touches the data of bottom i / top i (reads it, or
  // asks for a pointer, which may convert its layout). The memory plan of a
  // training net on the CPU lets the data of a blob that no backward touches
  // share storage once forward is done with it (core/net_memory_plan.hpp),
  // so a layer may say false only where its CPU backward never looks.
  virtual bool backward_touches_bottom_data(int bottom_index) const {
    (void)bottom_index;
    return true;
  }
  virtual bool backward_touches_top_data(int top_index) const {
    (void)top_index;
    return true;
  }

  // Host bytes the layer holds besides its blobs and parameters (copies kept
  // from forward for backward, masks, scratch), for the memory count `xtrain
  // time` logs (core/net_memory_count.hpp). Storage another layer lends it
  // is counted by the owner only.
  virtual std::size_t buffer_bytes() const { return 0; }

  // The device the kernels run on (set by the Net before setup).
  void set_device(const Device& device) { device_ = device; }
  const Device& device() const { return device_; }

  // This net's slice of a data-parallel batch (set by the Net before setup).
  void set_data_shard(const DataShard& shard) { data_shard_ = shard; }
  const DataShard& data_shard() const { return data_shard_; }

  // The layer's own random stream (fillers, dropout masks, augmentation).
  RandomStream& random() { return random_; }
  const RandomStream& random() const { return random_; }
  void seed(std::uint64_t seed) { random_.reseed(seed); }

  // Writes the parameter and the learnable blobs.
  virtual void to_proto(LayerParameter* param, bool write_diff = false) const;

  // Exact resume. A snapshot keeps, for every layer, its random stream plus
  // whatever save_resume_state() adds (a data layer's position in its
  // source); restore_resume_state() puts both back, so training continues
  // with the same numbers as if it had never stopped. The defaults keep the
  // random stream only. Overrides call the base version first.
  virtual void save_resume_state(LayerResumeState* state) const;
  // Throws xtrain::Error if the state cannot be applied (e.g. a data layer
  // that already started reading).
  virtual void restore_resume_state(const LayerResumeState& state);

 protected:
  virtual void forward_cpu(const BlobVec& bottom, const BlobVec& top) = 0;
  virtual void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) = 0;
  // GPU kernels fall back to the CPU ones until a layer provides its own.
  virtual void forward_gpu(const BlobVec& bottom, const BlobVec& top) { forward_cpu(bottom, top); }
  virtual void backward_gpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                            const BlobVec& bottom) {
    backward_cpu(top, propagate_down, bottom);
  }

  // "layer 'conv1' (Convolution)": the prefix of every error a layer raises.
  std::string where() const;

  LayerParameter param_;
  std::vector<std::shared_ptr<Blob>> blobs_;
  std::vector<bool> param_propagate_down_;
  std::vector<float> loss_;
  bool absorbed_ = false;

 private:
  void check_blob_counts(const BlobVec& bottom, const BlobVec& top) const;
  void forget_dead_layouts_before_forward(const BlobVec& bottom, const BlobVec& top) const;
  void forget_dead_layouts_before_backward(const BlobVec& top,
                                           const std::vector<bool>& propagate_down,
                                           const BlobVec& bottom) const;
  void set_loss_weights(const BlobVec& top);

  Device device_;
  DataShard data_shard_;
  RandomStream random_;
  std::vector<bool> channel_blocked_tops_;
};

}  // namespace xtrain

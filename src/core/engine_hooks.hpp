// EngineHooks: what the Net's CPU passes ask of a layer beyond Caffe's Layer
// interface -- fusing an in-place ReLU into the layer before it, keeping
// activations channel-blocked between layers, sharing and recomputing the
// values kept for backward, and the memory plan's questions.
//
// It is apart from xtrain::Layer, and not installed, so that a layer of one's
// own (docs/adding-a-layer.md) sees only what Caffe's Layer has: the built-in
// layers that take part in these passes derive from both Layer and
// EngineHooks, and the passes find the hooks with engine_hooks() below. A
// layer without them -- any application's layer, and the built-ins that need
// none -- answers as the defaults here do: it absorbs nothing, reads and
// writes plain blobs, keeps no copy to share, recomputes nothing, and its
// backward may touch all its blobs. The passes change no result (see
// core/net_engine_passes.cpp, core/channel_blocked_plan.hpp,
// core/net_memory_plan.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "core/kept_activation.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class EngineHooks {
 public:
  EngineHooks() = default;
  virtual ~EngineHooks() = default;
  EngineHooks(const EngineHooks&) = delete;
  EngineHooks& operator=(const EngineHooks&) = delete;

  // Fusion of an in-place ReLU (negative_slope 0) into the layer just before
  // it, which the Net asks for on the CPU: a layer that computes its top in
  // place may take the ReLU over, applying it as it writes its top and
  // masking the top's gradient as it reads it, which saves the ReLU's two
  // sweeps over memory with bit-identical results. Returns whether it did.
  virtual bool absorb_following_relu() { return false; }
  // Marks a layer whose work the layer before it does (see above): its
  // forward and backward then do nothing (Layer::forward, Layer::backward).
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
  virtual void recompute_top(const BlobVec& bottom, const BlobVec& top) {
    (void)bottom;
    (void)top;
  }

  // Gradients in place: the top (index) whose gradient storage bottom i's
  // gradient may be computed in, or -1. A layer says so where its backward,
  // on either device, reads that top's gradient element by element before it
  // writes the same element of the bottom's, and reads it nowhere else after
  // (Split accumulates the other tops' gradients into the first's; an
  // Eltwise sum with coefficient 1 finds the bottom's gradient there
  // already). The memory plan of a training net then gives the two
  // gradients one storage where nobody else reads them (core/net_memory_plan.hpp),
  // saving a value's storage at the step and, for Eltwise, a pass. The
  // layer must still compute right when they do not share (a reshape may
  // part them): it compares the pointers.
  virtual int top_whose_gradient_storage_bottom_may_use(int bottom_index) const {
    (void)bottom_index;
    return -1;
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
  // time` logs (xtrain/net_memory_count.hpp). Storage another layer lends it
  // is counted by the owner only.
  virtual std::size_t buffer_bytes() const { return 0; }

 private:
  bool absorbed_ = false;
  std::vector<bool> channel_blocked_tops_;
};

// The hooks `layer` implements, to change (fuse, share a copy, set the
// blocked tops, recompute), or null for a layer without them.
inline EngineHooks* mutable_engine_hooks(Layer& layer) {
  return dynamic_cast<EngineHooks*>(&layer);
}
// What the passes ask `layer`: its own answers, or a plain layer's.
inline const EngineHooks& engine_hooks(const Layer& layer) {
  static const EngineHooks plain_layer;
  const auto* hooks = dynamic_cast<const EngineHooks*>(&layer);
  return hooks != nullptr ? *hooks : plain_layer;
}

}  // namespace xtrain

// The shared base of the layers that compute one value per channel
// (BatchNorm, Scale, Bias): on a 4-axis input they compute as well on
// channel-blocked blobs (nChw8c/nChw16c) as on plain ones, so they take the
// layout they are given and write their top in it. The subclass says in
// reshape whether it runs in place and whether this input allows the blocked
// layout (set in_place_ and blocked_supported_); the layout hooks follow.
#pragma once

#include <vector>

#include "core/engine_hooks.hpp"
#include "xtrain/layer.hpp"

namespace xtrain {

class PerChannelLayer : public Layer, public EngineHooks {
 public:
  using Layer::Layer;

  bool reads_channel_blocked_bottom(int bottom_index) const override {
    return bottom_index == 0 && blocked_supported_;
  }
  bool can_write_channel_blocked_top(int top_index,
                                     const std::vector<bool>& blocked_bottoms) const override {
    return top_index == 0 && blocked_supported_ && blocked_bottoms[0];
  }
  // Out of place, bottom and top share the layout forward computes in; in
  // place, the layer follows the blob's.
  bool computes_in_one_layout() const override { return blocked_supported_ && !in_place_; }

 protected:
  bool in_place_ = false;
  // This input allows channel-blocked layouts (4 axes, per-channel values).
  bool blocked_supported_ = false;
};

}  // namespace xtrain

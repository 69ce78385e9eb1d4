// The passes that make a built net cheaper on the CPU, run by Net::init
// (and the layout pass again by Net::reshape) as NetOptions allows: in-place
// ReLUs fused into the layer before, kept copies shared between neighbours,
// channel-blocked activations, and the memory plan's shared storage. None
// changes a result (core/net_memory_plan.hpp, core/channel_blocked_plan.hpp).
#include <iomanip>
#include <sstream>

#include "core/activation_packing.hpp"
#include "core/channel_blocked_layout.hpp"
#include "core/channel_blocked_plan.hpp"
#include "core/engine_hooks.hpp"
#include "core/net_memory_plan.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

void Net::fuse_in_place_relus() {
  int fused = 0;
  for (std::size_t i = 1; i < layers_.size(); ++i) {
    Layer& relu = *layers_[i];
    const bool in_place_relu = std::string(relu.type()) == "ReLU" &&
                               relu.layer_param().relu_param().negative_slope() == 0.0f &&
                               bottom_vecs_[i].size() == 1 && top_vecs_[i].size() == 1 &&
                               bottom_vecs_[i][0] == top_vecs_[i][0];
    EngineHooks* relu_hooks = mutable_engine_hooks(relu);
    EngineHooks* before = mutable_engine_hooks(*layers_[i - 1]);
    // The layer before must write exactly the blob the ReLU rewrites.
    if (!in_place_relu || relu_hooks == nullptr || before == nullptr ||
        top_vecs_[i - 1].size() != 1 || top_vecs_[i - 1][0] != bottom_vecs_[i][0] ||
        before->absorbed_by_previous_layer()) {
      continue;
    }
    if (!before->absorb_following_relu()) continue;
    relu_hooks->set_absorbed_by_previous_layer();
    ++fused;
  }
  if (options_.verbose && fused > 0) {
    XLOG(INFO) << fused << " in-place ReLU layer(s) fused into the layer before them";
  }
}

void Net::share_kept_copies() {
  int shared = 0;
  for (std::size_t i = 1; i < layers_.size(); ++i) {
    EngineHooks* reader = mutable_engine_hooks(*layers_[i]);
    EngineHooks* lender = mutable_engine_hooks(*layers_[i - 1]);
    const bool in_place = bottom_vecs_[i].size() >= 1 && top_vecs_[i].size() >= 1 &&
                          bottom_vecs_[i][0] == top_vecs_[i][0];
    // The layer before must have written exactly this bottom, and both must
    // see it in the same layout (blocked or plain as it comes, or plain).
    if (reader == nullptr || lender == nullptr || !in_place || top_vecs_[i - 1].size() != 1 ||
        top_vecs_[i - 1][0] != bottom_vecs_[i][0] ||
        lender->reads_channel_blocked_bottom(0) != reader->reads_channel_blocked_bottom(0)) {
      continue;
    }
    std::shared_ptr<KeptActivation> copy = lender->kept_top_copy();
    if (copy && reader->use_kept_bottom_copy(std::move(copy))) ++shared;
  }
  if (options_.verbose && shared > 0) {
    XLOG(INFO) << shared << " layer(s) read the copy of their input the layer before keeps";
  }
}

void Net::arrange_channel_blocked_activations(bool log) {
  const std::vector<bool> blocked = plan_channel_blocked_blobs(*this);
  std::string names;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    std::vector<bool> tops;
    for (int id : top_id_vecs_[i]) tops.push_back(blocked[id]);
    // A layer without hooks writes no top blocked (the plan asks it
    // can_write_channel_blocked_top and gets the plain answer).
    if (EngineHooks* hooks = mutable_engine_hooks(*layers_[i])) {
      hooks->set_channel_blocked_tops(std::move(tops));
    }
  }
  for (std::size_t id = 0; id < blobs_.size(); ++id) {
    if (blocked[id]) names += (names.empty() ? "" : ", ") + blob_names_[id];
  }
  if (log && options_.verbose && !names.empty()) {
    XLOG(INFO) << "Channel-blocked activations (nChw" << channel_block()
               << "c, no reorders between their layers): " << names;
  }
}

void Net::share_activation_memory() {
  for (const std::string& name : options_.keep_blobs) {
    XTRAIN_CHECK(has_blob(name), "net '", name_, "' has no blob named '", name,
                 "' to keep out of the memory plan (NetOptions::keep_blobs)");
  }
  const std::vector<GradientInPlace> in_place = plan_gradients_in_place(*this, options_.keep_blobs);
  apply_gradients_in_place(*this, in_place);
  const NetMemoryPlan plan = plan_net_memory(*this, options_.keep_blobs);
  const AppliedNetMemoryPlan applied = apply_net_memory_plan(*this, plan);
  activation_packing_ = plan.packs.empty()
                            ? nullptr
                            : std::make_shared<ActivationPacking>(*this, plan, applied);
  recompute_before_backward_.assign(layers_.size(), {});
  for (const NetMemoryPlan::Recompute& recompute : plan.recomputes) {
    recompute_before_backward_[recompute.before_backward_of].push_back(recompute.layer);
  }
  if (options_.verbose) {
    constexpr double kMiB = 1024.0 * 1024.0;
    auto shared_blobs = [](const std::vector<NetMemoryPlan::Buffer>& buffers) {
      std::size_t blobs = 0;
      for (const auto& buffer : buffers) blobs += buffer.blobs.size();
      return blobs;
    };
    // "share one 147 MiB arena" on the CPU, "share 4 buffers" on a GPU.
    auto where = [&](const std::vector<NetMemoryPlan::Buffer>& buffers, std::size_t arena_bytes) {
      std::ostringstream text;
      if (arena_bytes > 0) {
        text << "one " << std::fixed << std::setprecision(1) << arena_bytes / kMiB << " MiB arena";
      } else {
        text << buffers.size() << " buffers";
      }
      return text.str();
    };
    XLOG(INFO) << "Memory plan: " << shared_blobs(plan.diff_buffers) << " blob diffs share "
               << where(plan.diff_buffers, plan.diff_arena_bytes) << ", "
               << shared_blobs(plan.data_buffers) << " blob data share "
               << where(plan.data_buffers, plan.data_arena_bytes) << ", "
               << plan.unshared_bytes / kMiB << " MiB -> " << plan.shared_bytes / kMiB << " MiB"
               << (plan.recomputes.empty()
                       ? std::string()
                       : ", " + std::to_string(plan.recomputes.size()) +
                             " layer output(s) recomputed in backward instead of kept")
               << (plan.packs.empty() ? std::string()
                                      : ", " + std::to_string(plan.packs.size()) +
                                            " kept in 16 bits between the passes")
               << (in_place.empty() ? std::string()
                                    : ", " + std::to_string(in_place.size()) +
                                          " gradient(s) computed in their top's storage");
  }
}

}  // namespace xtrain

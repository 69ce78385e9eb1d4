#include "core/channel_blocked_plan.hpp"

#include <algorithm>
#include <utility>

#include "core/engine_hooks.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

constexpr int kProgram = -1;  // a "reader" standing for whoever reads a net output

class Planner {
 public:
  explicit Planner(const Net& net) : net_(net), readers_(net.blobs().size()) {
    for (std::size_t i = 0; i < net.layers().size(); ++i) {
      const auto& bottoms = net.bottom_id_vecs()[i];
      for (std::size_t j = 0; j < bottoms.size(); ++j) {
        readers_[bottoms[j]].emplace_back(static_cast<int>(i), static_cast<int>(j));
      }
    }
    for (int output : net.output_blob_indices()) readers_[output].emplace_back(kProgram, 0);
  }

  std::vector<bool> plan() {
    std::vector<bool> kept_plain(net_.blobs().size(), false);
    for (;;) {
      const std::vector<bool> blocked = decide(kept_plain);
      if (!keep_one_layout_bottoms_plain(blocked, &kept_plain)) return blocked;
    }
  }

 private:
  // In layer order, so that a layer's bottoms are decided before its tops.
  std::vector<bool> decide(const std::vector<bool>& kept_plain) const {
    std::vector<bool> blocked(net_.blobs().size(), false);
    for (std::size_t i = 0; i < net_.layers().size(); ++i) {
      const EngineHooks& layer = engine_hooks(*net_.layers()[i]);
      const auto& bottoms = net_.bottom_id_vecs()[i];
      std::vector<bool> blocked_bottoms;
      for (int id : bottoms) blocked_bottoms.push_back(blocked[id]);
      const auto& tops = net_.top_id_vecs()[i];
      for (std::size_t t = 0; t < tops.size(); ++t) {
        const int id = tops[t];
        // An in-place top stays as its producer wrote it.
        if (std::find(bottoms.begin(), bottoms.end(), id) != bottoms.end()) continue;
        blocked[id] = !kept_plain[id] && net_.blobs()[id]->can_be_channel_blocked() &&
                      layer.can_write_channel_blocked_top(static_cast<int>(t), blocked_bottoms) &&
                      all_readers_read_blocked(id);
      }
    }
    return blocked;
  }

  bool all_readers_read_blocked(int blob) const {
    if (readers_[blob].empty()) return false;
    for (const auto& [index, bottom] : readers_[blob]) {
      if (index == kProgram) return false;
      const EngineHooks& reader = engine_hooks(*net_.layers()[index]);
      if (!reader.reads_channel_blocked_bottom(bottom)) return false;
      if (reader.tops_share_bottom_data()) {
        for (int top : net_.top_id_vecs()[index]) {
          if (!all_readers_read_blocked(top)) return false;
        }
      }
    }
    return true;
  }

  // Marks the blocked bottoms of one-layout layers whose tops stayed plain;
  // returns whether it marked any.
  bool keep_one_layout_bottoms_plain(const std::vector<bool>& blocked,
                                     std::vector<bool>* kept_plain) const {
    bool changed = false;
    for (std::size_t i = 0; i < net_.layers().size(); ++i) {
      if (!engine_hooks(*net_.layers()[i]).computes_in_one_layout()) continue;
      const auto& tops = net_.top_id_vecs()[i];
      const bool top_blocked =
          std::all_of(tops.begin(), tops.end(), [&](int id) { return blocked[id]; });
      if (top_blocked) continue;
      for (int id : net_.bottom_id_vecs()[i]) {
        if (blocked[id] && !(*kept_plain)[id]) {
          (*kept_plain)[id] = true;
          changed = true;
        }
      }
    }
    return changed;
  }

  const Net& net_;
  std::vector<std::vector<std::pair<int, int>>> readers_;  // per blob: (layer, bottom index)
};

}  // namespace

std::vector<bool> plan_channel_blocked_blobs(const Net& net) { return Planner(net).plan(); }

}  // namespace xtrain

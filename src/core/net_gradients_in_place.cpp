// Gradients in place (core/net_memory_plan.hpp, GradientInPlace): which
// bottom gradients a layer computes in its top's gradient storage, and
// moving them there.
#include <algorithm>
#include <set>

#include "core/engine_hooks.hpp"
#include "core/net_memory_plan.hpp"
#include "core/net_memory_units.hpp"
#include "xtrain/net.hpp"

namespace xtrain {

using namespace memory_plan;  // the storage units and walks of core/net_memory_units.hpp

std::vector<GradientInPlace> plan_gradients_in_place(const Net& net,
                                                     const std::vector<std::string>& keep_blobs) {
  std::vector<GradientInPlace> result;
  if (net.phase() == TEST) return result;
  Units units = group_by_storage(net, Part::kDiff);
  walk_backward(net, &units);
  decide_sharing(net, Part::kDiff, pinned_blobs(net, keep_blobs), &units);
  const int layers = static_cast<int>(net.layers().size());
  std::vector<int> step_of(layers, -1);  // as walk_backward counts them
  for (int layer = layers - 1, step = 0; layer >= 0; --layer) {
    if (net.layer_needs_backward(layer)) step_of[layer] = step++;
  }
  // One gradient in each storage at a time: a top's storage serves one bottom.
  std::set<int> lent_top_units;
  for (int layer = layers - 1; layer >= 0; --layer) {
    if (step_of[layer] < 0) continue;
    const EngineHooks& hooks = engine_hooks(*net.layers()[layer]);
    const auto& bottoms = net.bottom_id_vecs()[layer];
    const auto& tops = net.top_id_vecs()[layer];
    for (std::size_t b = 0; b < bottoms.size(); ++b) {
      const int t = hooks.top_whose_gradient_storage_bottom_may_use(static_cast<int>(b));
      if (t < 0 || t >= static_cast<int>(tops.size()) || !net.bottom_need_backward()[layer][b]) {
        continue;
      }
      // A blob the layer has twice (or in place) has one gradient for both.
      const int bottom = bottoms[b];
      if (std::count(bottoms.begin(), bottoms.end(), bottom) != 1 ||
          std::count(tops.begin(), tops.end(), bottom) != 0) {
        continue;
      }
      const int bottom_unit = units.unit_of_blob[bottom];
      const int top_unit = units.unit_of_blob[tops[t]];
      if (bottom_unit < 0 || top_unit < 0 || bottom_unit == top_unit) continue;
      const StorageUnit& written = units.units[bottom_unit];
      const StorageUnit& read = units.units[top_unit];
      if (!written.may_share || !read.may_share || read.life.last != step_of[layer] ||
          written.life.first != step_of[layer] || read.memory->size() < written.memory->size() ||
          !lent_top_units.insert(top_unit).second) {
        continue;
      }
      result.push_back({layer, bottom, tops[t]});
    }
  }
  return result;
}

void apply_gradients_in_place(const Net& net, const std::vector<GradientInPlace>& in_place) {
  for (const GradientInPlace& pair : in_place) {
    const std::shared_ptr<SyncedMemory> bottom_storage = net.blobs()[pair.bottom]->diff_memory();
    const std::shared_ptr<SyncedMemory> top_storage = net.blobs()[pair.top]->diff_memory();
    // Every blob of the bottom's unit (in-place layers, Flatten) moves along.
    for (const auto& blob : net.blobs()) {
      if (blob->diff_memory() == bottom_storage) blob->use_diff_memory(top_storage);
    }
  }
}

}  // namespace xtrain

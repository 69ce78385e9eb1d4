#include "core/net_memory_units.hpp"

#include <algorithm>
#include <set>

#include "core/engine_hooks.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace memory_plan {
namespace {

enum class Pass { kForward, kBackward };

void extend(LiveInterval& life, int step) {
  if (life.first < 0) life.first = step;
  life.last = std::max(life.last, step);
}

// One step of the schedule, layer `layer` in `pass`, reads some units, then
// writes some.
void record_step(Units* units, int step, Pass pass, int layer, const std::vector<int>& read_blobs,
                 const std::vector<int>& written_blobs) {
  auto touch = [&](int blob, bool is_read) {
    const int unit_id = units->unit_of_blob[blob];
    if (unit_id < 0) return;
    StorageUnit& unit = units->units[unit_id];
    if (unit.life.first < 0) unit.first_use_is_read = is_read;
    extend(unit.life, step);
    if (pass == Pass::kForward) {
      extend(unit.forward_life, step);
      if (!is_read && layer >= 0) unit.last_forward_writer = layer;
    } else {
      extend(unit.backward_life, step);
    }
  };
  for (int blob : read_blobs) touch(blob, true);
  for (int blob : written_blobs) touch(blob, false);
}

}  // namespace

const std::shared_ptr<SyncedMemory>& storage_of(const Blob& blob, Part part) {
  return part == Part::kData ? blob.data_memory() : blob.diff_memory();
}

Units group_by_storage(const Net& net, Part part) {
  Units result;
  std::map<const SyncedMemory*, int> index;
  for (const auto& blob : net.blobs()) {
    const SyncedMemory* memory = storage_of(*blob, part).get();
    if (memory == nullptr) {
      result.unit_of_blob.push_back(-1);
      continue;
    }
    auto found = index.find(memory);
    if (found == index.end()) {
      found = index.emplace(memory, static_cast<int>(result.units.size())).first;
      result.units.emplace_back();
      result.units.back().memory = memory;
    }
    result.units[found->second].blobs.push_back(static_cast<int>(result.unit_of_blob.size()));
    result.unit_of_blob.push_back(found->second);
  }
  return result;
}

void walk_backward(const Net& net, Units* units) {
  int step = 0;
  for (int layer = static_cast<int>(net.layers().size()) - 1; layer >= 0; --layer) {
    if (!net.layer_needs_backward(layer)) continue;
    std::vector<int> written;
    const auto& bottoms = net.bottom_id_vecs()[layer];
    for (std::size_t i = 0; i < bottoms.size(); ++i) {
      if (net.bottom_need_backward()[layer][i]) written.push_back(bottoms[i]);
    }
    record_step(units, step++, Pass::kBackward, layer, net.top_id_vecs()[layer], written);
  }
}

void walk_forward(const Net& net, Units* units) {
  for (std::size_t layer = 0; layer < net.layers().size(); ++layer) {
    const EngineHooks& hooks = engine_hooks(*net.layers()[layer]);
    // A layer absorbed by the one before it (a fused ReLU) computes nothing
    // itself: the one before is the writer.
    const bool absorbed = hooks.absorbed_by_previous_layer();
    const auto& bottoms = net.bottom_id_vecs()[layer];
    const auto& tops = net.top_id_vecs()[layer];
    if (hooks.tops_share_bottom_data()) {
      // A Split's tops are views of its bottom: it reads, the writer of the
      // values stays the layer before.
      std::vector<int> viewed = bottoms;
      viewed.insert(viewed.end(), tops.begin(), tops.end());
      record_step(units, static_cast<int>(layer), Pass::kForward, -1, viewed, {});
      continue;
    }
    record_step(units, static_cast<int>(layer), Pass::kForward,
                absorbed ? -1 : static_cast<int>(layer), bottoms, tops);
  }
}

void walk_forward_then_backward(const Net& net, Units* units) {
  walk_forward(net, units);
  int step = static_cast<int>(net.layers().size());
  for (int layer = static_cast<int>(net.layers().size()) - 1; layer >= 0; --layer) {
    const EngineHooks& hooks = engine_hooks(*net.layers()[layer]);
    if (!net.layer_needs_backward(layer) || hooks.absorbed_by_previous_layer()) continue;
    std::vector<int> touched;
    const auto& bottoms = net.bottom_id_vecs()[layer];
    for (std::size_t i = 0; i < bottoms.size(); ++i) {
      if (hooks.backward_touches_bottom_data(static_cast<int>(i))) touched.push_back(bottoms[i]);
    }
    const auto& tops = net.top_id_vecs()[layer];
    for (std::size_t i = 0; i < tops.size(); ++i) {
      if (hooks.backward_touches_top_data(static_cast<int>(i))) touched.push_back(tops[i]);
    }
    for (const auto* blobs : {&bottoms, &tops}) {
      for (int blob : *blobs) {
        const int unit_id = units->unit_of_blob[blob];
        if (unit_id < 0) continue;
        StorageUnit& unit = units->units[unit_id];
        if (unit.first_backward_involvement >= 0) continue;
        unit.first_backward_involvement = step;
      }
    }
    units->layer_at_backward_step[step] = layer;
    record_step(units, step++, Pass::kBackward, layer, touched, {});
  }
}

std::vector<bool> pinned_blobs(const Net& net, const std::vector<std::string>& keep_blobs) {
  std::vector<bool> pinned(net.blobs().size(), false);
  for (int i : net.output_blob_indices()) pinned[i] = true;
  for (const Blob* input : net.input_blobs()) {
    for (std::size_t i = 0; i < net.blobs().size(); ++i) {
      if (net.blobs()[i].get() == input) pinned[i] = true;
    }
  }
  for (std::size_t i = 0; i < net.blobs().size(); ++i) {
    if (net.blob_loss_weights()[i] != 0) pinned[i] = true;
  }
  const std::set<std::string> keep(keep_blobs.begin(), keep_blobs.end());
  for (std::size_t i = 0; i < net.blobs().size(); ++i) {
    if (keep.count(net.blob_names()[i])) pinned[i] = true;
  }
  return pinned;
}

void decide_sharing(const Net& net, Part part, const std::vector<bool>& pinned, Units* units) {
  for (StorageUnit& unit : units->units) {
    const auto& memory = storage_of(*net.blobs()[unit.blobs.front()], part);
    const bool unused = unit.life.first < 0;
    const bool written_at_setup = memory->head() != SyncedMemory::Head::kUninitialized;
    // use_count counts every holder; if it exceeds the net's blobs, a layer
    // (or the program) holds this storage too.
    const bool held_elsewhere = memory.use_count() != static_cast<long>(unit.blobs.size());
    const bool has_pinned_blob =
        std::any_of(unit.blobs.begin(), unit.blobs.end(), [&](int b) { return pinned[b]; });
    unit.may_share = !unused && !written_at_setup && !held_elsewhere && !has_pinned_blob &&
                     !unit.first_use_is_read && memory->size() > 0;
  }
}

}  // namespace memory_plan
}  // namespace xtrain

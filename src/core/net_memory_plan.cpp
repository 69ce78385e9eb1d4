#include "core/net_memory_plan.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <set>

#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

enum class Part { kData, kDiff };

const std::shared_ptr<SyncedMemory>& storage_of(const Blob& blob, Part part) {
  return part == Part::kData ? blob.data_memory() : blob.diff_memory();
}

// Blobs that hold one SyncedMemory, and what the schedule does with it.
struct StorageUnit {
  const SyncedMemory* memory = nullptr;
  std::vector<int> blobs;
  LiveInterval life;           // every step that touches it
  LiveInterval forward_life;   // the steps of the forward pass among them
  LiveInterval backward_life;  // and of the backward pass
  int last_forward_writer = -1;  // layer
  // The first step of backward whose layer has one of the unit's blobs as a
  // bottom or top, touching its values or not, and that layer: a layer may
  // choose its layouts by a blob's, so recomputed values must be back by then.
  int first_backward_involvement = -1;
  int first_backward_layer = -1;
  bool first_use_is_read = false;
  bool may_share = true;
  int recomputed_by = -1;  // layer, when the unit lives twice (see the header)
};

struct Units {
  std::vector<StorageUnit> units;
  std::vector<int> unit_of_blob;  // -1 for blobs without storage
};

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

// The backward pass: each layer that runs reads its tops' diffs and writes
// the diffs of the bottoms it propagates to.
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

// The forward pass: each layer reads its bottoms' data and writes its tops'.
void walk_forward(const Net& net, Units* units) {
  for (std::size_t layer = 0; layer < net.layers().size(); ++layer) {
    // A layer absorbed by the one before it (a fused ReLU) computes nothing
    // itself: the one before is the writer.
    const bool absorbed = net.layers()[layer]->absorbed_by_previous_layer();
    record_step(units, static_cast<int>(layer), Pass::kForward,
                absorbed ? -1 : static_cast<int>(layer), net.bottom_id_vecs()[layer],
                net.top_id_vecs()[layer]);
  }
}

// A training iteration as data sees it: the forward pass, then the backward
// pass, in which each layer that runs touches the values of the bottoms and
// tops it says it does (Layer::backward_touches_*_data).
void walk_forward_then_backward(const Net& net, Units* units) {
  walk_forward(net, units);
  int step = static_cast<int>(net.layers().size());
  for (int layer = static_cast<int>(net.layers().size()) - 1; layer >= 0; --layer) {
    const Layer& this_layer = *net.layers()[layer];
    if (!net.layer_needs_backward(layer) || this_layer.absorbed_by_previous_layer()) continue;
    std::vector<int> touched;
    const auto& bottoms = net.bottom_id_vecs()[layer];
    for (std::size_t i = 0; i < bottoms.size(); ++i) {
      if (this_layer.backward_touches_bottom_data(static_cast<int>(i)))
        touched.push_back(bottoms[i]);
    }
    const auto& tops = net.top_id_vecs()[layer];
    for (std::size_t i = 0; i < tops.size(); ++i) {
      if (this_layer.backward_touches_top_data(static_cast<int>(i))) touched.push_back(tops[i]);
    }
    for (const auto* blobs : {&bottoms, &tops}) {
      for (int blob : *blobs) {
        const int unit_id = units->unit_of_blob[blob];
        if (unit_id < 0) continue;
        StorageUnit& unit = units->units[unit_id];
        if (unit.first_backward_involvement >= 0) continue;
        unit.first_backward_involvement = step;
        unit.first_backward_layer = layer;
      }
    }
    record_step(units, step++, Pass::kBackward, layer, touched, {});
  }
}

// The blobs whose storage stays their own whatever the schedule says.
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

// Units whose values backward needs but their last forward writer can
// write again: live twice, recomputed before their first backward use.
void plan_recomputes(const Net& net, Units* units) {
  for (StorageUnit& unit : units->units) {
    if (!unit.may_share || unit.backward_life.first < 0 || unit.last_forward_writer < 0 ||
        unit.first_backward_involvement < 0) {
      continue;
    }
    if (!net.layers()[unit.last_forward_writer]->can_recompute_top()) continue;
    unit.recomputed_by = unit.last_forward_writer;
  }
}

Lifetime lifetime_of(const StorageUnit& unit) {
  if (unit.recomputed_by < 0) return {unit.life, {}};
  return {unit.forward_life, {unit.first_backward_involvement, unit.backward_life.last}};
}

void plan_part(const Net& net, Part part, const std::vector<bool>& pinned,
               std::vector<NetMemoryPlan::Buffer>* buffers, NetMemoryPlan* plan) {
  Units units = group_by_storage(net, part);
  if (part == Part::kDiff) {
    walk_backward(net, &units);
  } else if (net.phase() == TEST) {
    walk_forward(net, &units);
  } else {
    walk_forward_then_backward(net, &units);
  }
  decide_sharing(net, part, pinned, &units);
  if (part == Part::kData && net.phase() != TEST) plan_recomputes(net, &units);

  std::vector<Lifetime> lives;
  std::vector<std::size_t> bytes;
  std::vector<bool> eligible;
  for (const StorageUnit& unit : units.units) {
    lives.push_back(lifetime_of(unit));
    bytes.push_back(unit.memory->size());
    eligible.push_back(unit.may_share);
  }
  std::vector<std::size_t> buffer_bytes;
  const std::vector<int> buffer_of = assign_shared_buffers(lives, bytes, eligible, &buffer_bytes);

  std::vector<int> members(buffer_bytes.size(), 0);
  for (int buffer : buffer_of) {
    if (buffer >= 0) ++members[buffer];
  }
  // A buffer with one unit changes nothing: that unit keeps its storage.
  std::vector<int> kept_index(buffer_bytes.size(), -1);
  for (std::size_t b = 0; b < buffer_bytes.size(); ++b) {
    if (members[b] < 2) continue;
    kept_index[b] = static_cast<int>(buffers->size());
    buffers->push_back({buffer_bytes[b], {}});
    plan->shared_bytes += buffer_bytes[b];
  }
  for (std::size_t u = 0; u < units.units.size(); ++u) {
    if (buffer_of[u] < 0 || kept_index[buffer_of[u]] < 0) continue;
    const StorageUnit& unit = units.units[u];
    auto& blobs = (*buffers)[kept_index[buffer_of[u]]].blobs;
    blobs.insert(blobs.end(), unit.blobs.begin(), unit.blobs.end());
    plan->unshared_bytes += bytes[u];
    // Only a unit that shares its storage needs writing again.
    if (unit.recomputed_by >= 0) {
      plan->recomputes.push_back({unit.recomputed_by, unit.first_backward_layer});
    }
  }
}

}  // namespace

bool Lifetime::overlaps(const Lifetime& other) const {
  for (const LiveInterval& mine : {first, second}) {
    if (mine.first < 0) continue;
    for (const LiveInterval& theirs : {other.first, other.second}) {
      if (theirs.first >= 0 && mine.overlaps(theirs)) return true;
    }
  }
  return false;
}

std::vector<int> assign_shared_buffers(const std::vector<Lifetime>& lives,
                                       const std::vector<std::size_t>& bytes,
                                       const std::vector<bool>& eligible,
                                       std::vector<std::size_t>* buffer_bytes) {
  XTRAIN_ASSERT(lives.size() == bytes.size() && bytes.size() == eligible.size());
  std::vector<int> order(lives.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first (ties by schedule order), so each buffer's first unit is
  // its largest and sets its size.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (bytes[a] != bytes[b]) return bytes[a] > bytes[b];
    return lives[a].first.first < lives[b].first.first;
  });
  std::vector<int> buffer_of(lives.size(), -1);
  std::vector<std::vector<int>> occupants;
  buffer_bytes->clear();
  for (int unit : order) {
    if (!eligible[unit]) continue;
    XTRAIN_ASSERT(lives[unit].first.first >= 0 && lives[unit].first.first <= lives[unit].first.last);
    std::size_t buffer = 0;
    for (; buffer < occupants.size(); ++buffer) {
      const bool clashes =
          std::any_of(occupants[buffer].begin(), occupants[buffer].end(),
                      [&](int other) { return lives[other].overlaps(lives[unit]); });
      if (!clashes) break;
    }
    if (buffer == occupants.size()) {
      occupants.emplace_back();
      buffer_bytes->push_back(bytes[unit]);
    }
    occupants[buffer].push_back(unit);
    buffer_of[unit] = static_cast<int>(buffer);
  }
  return buffer_of;
}

NetMemoryPlan plan_net_memory(const Net& net, const std::vector<std::string>& keep_blobs) {
  NetMemoryPlan plan;
  const std::vector<bool> pinned = pinned_blobs(net, keep_blobs);
  // A TEST net runs forward only (Net::backward refuses once it shares data),
  // though its layers with parameters are marked as needing backward.
  if (net.phase() == TEST) {
    plan_part(net, Part::kData, pinned, &plan.data_buffers, &plan);
    return plan;
  }
  plan_part(net, Part::kDiff, pinned, &plan.diff_buffers, &plan);
  // What the layers' backward passes touch is declared for their CPU code.
  const bool on_cpu =
      std::none_of(net.layers().begin(), net.layers().end(),
                   [](const std::shared_ptr<Layer>& layer) { return layer->device().is_gpu(); });
  if (on_cpu) plan_part(net, Part::kData, pinned, &plan.data_buffers, &plan);
  return plan;
}

void apply_net_memory_plan(const Net& net, const NetMemoryPlan& plan) {
  for (const NetMemoryPlan::Buffer& buffer : plan.diff_buffers) {
    auto memory = std::make_shared<SyncedMemory>(buffer.bytes);
    for (int blob : buffer.blobs) net.blobs()[blob]->use_diff_memory(memory);
  }
  for (const NetMemoryPlan::Buffer& buffer : plan.data_buffers) {
    auto memory = std::make_shared<SyncedMemory>(buffer.bytes);
    for (int blob : buffer.blobs) net.blobs()[blob]->use_data_memory(memory);
  }
}

}  // namespace xtrain

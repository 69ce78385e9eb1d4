#include "core/net_memory_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "core/aligned_host_memory.hpp"
#include "core/engine_hooks.hpp"
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
  // bottom or top, touching its values or not: a layer may choose its
  // layouts by a blob's, so recomputed values must be back by then.
  int first_backward_involvement = -1;
  bool first_use_is_read = false;
  bool may_share = true;
  int recomputed_by = -1;  // layer, when the unit lives twice (see the header)
  int recompute_step = -1;  // from which step of backward it holds them again
  // Packed into 16 bits between the passes (see the header): the type, and
  // the step of backward from which it holds its values again.
  NumberType packed_type = NumberType::kFloat32;
  int unpack_step = -1;
};

struct Units {
  std::vector<StorageUnit> units;
  std::vector<int> unit_of_blob;  // -1 for blobs without storage
  std::map<int, int> layer_at_backward_step;
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

// A training iteration as data sees it: the forward pass, then the backward
// pass, in which each layer that runs touches the values of the bottoms and
// tops it says it does (EngineHooks::backward_touches_*_data).
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

// Recomputation (see the header): a unit whose values backward needs is
// written again by its last forward writer, if that layer can do it
// (EngineHooks::can_recompute_top) and the bottoms it reads then -- all but the
// unit itself, for a layer in place -- hold the values it read in forward at
// that step. A bottom holds them if its storage is its own, or it is live
// then (from forward, or recomputed at that step or before), or it can be
// recomputed at that step from nothing but what its writer keeps (a Scale
// after BatchNorm). Chains go no deeper: a ResNet block's output, the sum
// of two Scale outputs (a stage's first block) or of a Scale output and the
// block before, is recomputed where the block before is live, so a stage
// alternates kept and recomputed outputs rather than bringing them all back
// at once (which made the stage's first backward step the net's peak).
class RecomputePlanner {
 public:
  RecomputePlanner(const Net& net, Units* units) : net_(net), units_(*units) {}

  void plan() {
    // Optimistic start: every candidate recomputed at its first backward
    // involvement; then, in forward order, candidates whose bottoms cannot
    // be had are dropped until none is (a dropped unit stays live, which
    // only helps the others).
    std::vector<int> candidates;
    for (std::size_t u = 0; u < units_.units.size(); ++u) {
      StorageUnit& unit = units_.units[u];
      if (!unit.may_share || unit.backward_life.first < 0 || unit.first_backward_involvement < 0 ||
          !writer_can_recompute(unit)) {
        continue;
      }
      unit.recomputed_by = unit.last_forward_writer;
      unit.recompute_step = unit.first_backward_involvement;
      candidates.push_back(static_cast<int>(u));
    }
    for (bool dropped = true; dropped;) {
      dropped = false;
      for (int u : candidates) {
        StorageUnit& unit = units_.units[u];
        if (unit.recomputed_by < 0 || bottoms_obtainable(u, unit.recompute_step)) continue;
        unit.recomputed_by = -1;
        unit.recompute_step = -1;
        dropped = true;
      }
    }
    // Bottoms needed at a step before their own recomputation, or dead by
    // then, are recomputed at that step.
    for (int u : candidates) {
      const StorageUnit& unit = units_.units[u];
      if (unit.recomputed_by < 0) continue;
      for (int bottom : bottom_units(u)) obtain(bottom, unit.recompute_step);
    }
  }

 private:
  bool writer_can_recompute(const StorageUnit& unit) const {
    return unit.last_forward_writer >= 0 &&
           engine_hooks(*net_.layers()[unit.last_forward_writer]).can_recompute_top();
  }

  // The units of the bottoms that `u`'s writer reads when recomputing it.
  std::vector<int> bottom_units(int u) const {
    std::vector<int> result;
    for (int blob : net_.bottom_id_vecs()[units_.units[u].last_forward_writer]) {
      const int bottom = units_.unit_of_blob[blob];
      if (bottom != u) result.push_back(bottom);
    }
    return result;
  }

  bool bottoms_obtainable(int u, int step) const {
    const int reader = units_.units[u].last_forward_writer;
    for (int bottom : bottom_units(u)) {
      if (!obtainable(bottom, reader, step)) return false;
    }
    return true;
  }

  // Whether unit `u` can hold at `step` the values `reader` read in forward.
  bool obtainable(int u, int reader, int step) const {
    if (u < 0) return false;
    const StorageUnit& unit = units_.units[u];
    if (unit.last_forward_writer > reader) return false;  // changed after `reader` read it
    if (!unit.may_share) return true;                      // its own storage: never lent out
    if (unit.recomputed_by < 0 ? unit.life.last >= step : unit.recompute_step <= step) return true;
    return writer_can_recompute(unit) && bottom_units(u).empty();
  }

  // Makes unit `u` hold its values at `step` (obtainable says it can).
  void obtain(int u, int step) {
    StorageUnit& unit = units_.units[u];
    if (!unit.may_share) return;
    if (unit.recomputed_by < 0) {
      if (unit.life.last >= step) return;
      // Its values are needed at `step` only (lifetime_of): a unit that
      // backward reads itself would be a candidate, and a candidate that
      // reads no bottoms is never dropped.
      XTRAIN_ASSERT(unit.backward_life.first < 0, "a unit backward reads was not planned");
      unit.recomputed_by = unit.last_forward_writer;
    } else if (unit.recompute_step <= step) {
      return;
    }
    XTRAIN_ASSERT(bottom_units(u).empty(), "only a unit that reads no bottoms is brought forward");
    unit.recompute_step = step;
  }

  const Net& net_;
  Units& units_;
};

// The type of the values unit `u` holds after forward: its last forward
// writer's storage type for the top that is the unit (fp32 when the net
// computes in fp32, or the top stays exact).
NumberType stored_type(const Net& net, const Units& units, int u) {
  const int writer = units.units[u].last_forward_writer;
  if (writer < 0) return NumberType::kFloat32;
  const auto& tops = net.top_id_vecs()[writer];
  for (std::size_t t = 0; t < tops.size(); ++t) {
    if (units.unit_of_blob[tops[t]] == u) {
      return net.layers()[writer]->top_storage(static_cast<int>(t));
    }
  }
  return NumberType::kFloat32;
}

// Packing (see the header): a unit of 16-bit values that lends its storage
// between its last forward use and its first backward use, with at least
// one step between them. Units a recomputation reads are left alone (the
// recomputation may run before the unit's own first use).
void plan_packing(const Net& net, Units* units) {
  std::vector<bool> read_by_recomputation(units->units.size(), false);
  for (const StorageUnit& unit : units->units) {
    if (unit.recomputed_by < 0) continue;
    for (int blob : net.bottom_id_vecs()[unit.recomputed_by]) {
      const int bottom = units->unit_of_blob[blob];
      if (bottom >= 0) read_by_recomputation[bottom] = true;
    }
  }
  for (std::size_t u = 0; u < units->units.size(); ++u) {
    StorageUnit& unit = units->units[u];
    if (!unit.may_share || unit.recomputed_by >= 0 || read_by_recomputation[u] ||
        unit.backward_life.first < 0 || unit.forward_life.last < 0) {
      continue;
    }
    const int first_use = unit.first_backward_involvement >= 0
                              ? std::min(unit.first_backward_involvement, unit.backward_life.first)
                              : unit.backward_life.first;
    if (first_use - unit.forward_life.last < 2) continue;
    const NumberType type = stored_type(net, *units, static_cast<int>(u));
    if (type != NumberType::kBfloat16 && type != NumberType::kFloat16) continue;
    unit.packed_type = type;
    unit.unpack_step = first_use;
  }
}

Lifetime lifetime_of(const StorageUnit& unit) {
  if (unit.unpack_step >= 0) {
    return {unit.forward_life, {unit.unpack_step, unit.life.last}};
  }
  if (unit.recomputed_by < 0) return {unit.life, {}};
  // A unit recomputed only for another's sake holds its values for that step.
  return {unit.forward_life,
          {unit.recompute_step, std::max(unit.recompute_step, unit.backward_life.last)}};
}

// Which units share, and where: arena places (`arena`) or buffers. A unit
// that would share with nobody keeps its own storage.
struct Placement {
  std::vector<int> slot;                 // per unit: its buffer, -1 for its own storage
  std::vector<std::ptrdiff_t> offsets;   // per buffer, in the arena (arena placement)
  std::vector<std::size_t> slot_bytes;   // per buffer
  std::size_t arena_bytes = 0;
};

bool ranges_overlap(std::ptrdiff_t a, std::size_t a_bytes, std::ptrdiff_t b, std::size_t b_bytes) {
  return a < b + static_cast<std::ptrdiff_t>(b_bytes) && b < a + static_cast<std::ptrdiff_t>(a_bytes);
}

// Units marked in `must_place` (packed values) get their arena place even
// when they share it with nobody.
Placement place_in_arena(const std::vector<Lifetime>& lives, const std::vector<std::size_t>& bytes,
                         const std::vector<bool>& eligible, const std::vector<bool>& must_place) {
  std::size_t arena_bytes = 0;
  const std::vector<std::ptrdiff_t> offsets = assign_arena_offsets(lives, bytes, eligible, &arena_bytes);
  Placement placement;
  placement.slot.assign(lives.size(), -1);
  for (std::size_t u = 0; u < lives.size(); ++u) {
    if (offsets[u] < 0) continue;
    bool shares = must_place[u];
    for (std::size_t other = 0; other < lives.size() && !shares; ++other) {
      shares = other != u && offsets[other] >= 0 &&
               ranges_overlap(offsets[u], bytes[u], offsets[other], bytes[other]);
    }
    if (!shares) continue;
    placement.slot[u] = static_cast<int>(placement.offsets.size());
    placement.offsets.push_back(offsets[u]);
    placement.slot_bytes.push_back(bytes[u]);
    placement.arena_bytes =
        std::max(placement.arena_bytes, static_cast<std::size_t>(offsets[u]) + bytes[u]);
  }
  return placement;
}

Placement place_in_buffers(const std::vector<Lifetime>& lives,
                           const std::vector<std::size_t>& bytes,
                           const std::vector<bool>& eligible) {
  std::vector<std::size_t> buffer_bytes;
  const std::vector<int> buffer_of = assign_shared_buffers(lives, bytes, eligible, &buffer_bytes);
  std::vector<int> members(buffer_bytes.size(), 0);
  for (int buffer : buffer_of) {
    if (buffer >= 0) ++members[buffer];
  }
  Placement placement;
  std::vector<int> kept_index(buffer_bytes.size(), -1);
  for (std::size_t b = 0; b < buffer_bytes.size(); ++b) {
    if (members[b] < 2) continue;
    kept_index[b] = static_cast<int>(placement.slot_bytes.size());
    placement.slot_bytes.push_back(buffer_bytes[b]);
    placement.offsets.push_back(-1);
  }
  placement.slot.assign(lives.size(), -1);
  for (std::size_t u = 0; u < lives.size(); ++u) {
    if (buffer_of[u] >= 0) placement.slot[u] = kept_index[buffer_of[u]];
  }
  return placement;
}

void plan_part(const Net& net, Part part, const std::vector<bool>& pinned, bool arena,
               std::vector<NetMemoryPlan::Buffer>* buffers, std::size_t* arena_bytes,
               NetMemoryPlan* plan) {
  Units units = group_by_storage(net, part);
  if (part == Part::kDiff) {
    walk_backward(net, &units);
  } else if (net.phase() == TEST) {
    walk_forward(net, &units);
  } else {
    walk_forward_then_backward(net, &units);
  }
  decide_sharing(net, part, pinned, &units);
  const bool training_data = part == Part::kData && net.phase() != TEST;
  if (training_data) RecomputePlanner(net, &units).plan();
  if (training_data && arena) plan_packing(net, &units);

  std::vector<Lifetime> lives;
  std::vector<std::size_t> bytes;
  std::vector<bool> eligible;
  for (const StorageUnit& unit : units.units) {
    lives.push_back(lifetime_of(unit));
    bytes.push_back(unit.memory->size());
    eligible.push_back(unit.may_share);
  }
  // The packed copies: places of their own in the arena, live from the
  // last forward use to the first backward use.
  std::vector<bool> must_place(units.units.size(), false);
  std::vector<int> packed_place_of(units.units.size(), -1);
  for (std::size_t u = 0; u < units.units.size(); ++u) {
    const StorageUnit& unit = units.units[u];
    if (unit.unpack_step < 0) continue;
    packed_place_of[u] = static_cast<int>(lives.size());
    lives.push_back({{unit.forward_life.last, unit.unpack_step}, {}});
    bytes.push_back(unit.memory->size() / sizeof(float) * sizeof(std::uint16_t));
    eligible.push_back(true);
    must_place.push_back(true);
  }
  must_place.resize(lives.size(), false);
  const Placement placement = arena ? place_in_arena(lives, bytes, eligible, must_place)
                                    : place_in_buffers(lives, bytes, eligible);
  const std::size_t first = buffers->size();
  for (std::size_t b = 0; b < placement.slot_bytes.size(); ++b) {
    buffers->push_back({placement.slot_bytes[b], {}, placement.offsets[b]});
    if (!arena) plan->shared_bytes += placement.slot_bytes[b];
  }
  *arena_bytes = placement.arena_bytes;
  plan->shared_bytes += placement.arena_bytes;
  for (std::size_t u = 0; u < units.units.size(); ++u) {
    if (placement.slot[u] < 0) continue;
    const StorageUnit& unit = units.units[u];
    if (unit.unpack_step >= 0) {
      const int packed_place = placement.slot[static_cast<std::size_t>(packed_place_of[u])];
      plan->packs.push_back({unit.blobs.front(), unit.packed_type,
                             unit.memory->size() / sizeof(float),
                             placement.offsets[static_cast<std::size_t>(packed_place)],
                             unit.forward_life.last,
                             units.layer_at_backward_step.at(unit.unpack_step)});
    }
    auto& blobs = (*buffers)[first + placement.slot[u]].blobs;
    blobs.insert(blobs.end(), unit.blobs.begin(), unit.blobs.end());
    plan->unshared_bytes += bytes[u];
    // Only a unit that shares its storage needs writing again.
    if (unit.recomputed_by >= 0) {
      plan->recomputes.push_back(
          {unit.recomputed_by, units.layer_at_backward_step.at(unit.recompute_step)});
    }
  }
  // Within one step, a recomputation may read what another writes: forward
  // order.
  std::sort(plan->recomputes.begin(), plan->recomputes.end(),
            [](const NetMemoryPlan::Recompute& a, const NetMemoryPlan::Recompute& b) {
              if (a.before_backward_of != b.before_backward_of) {
                return a.before_backward_of > b.before_backward_of;
              }
              return a.layer < b.layer;
            });
}

}  // namespace

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

NetMemoryPlan plan_net_memory(const Net& net, const std::vector<std::string>& keep_blobs) {
  NetMemoryPlan plan;
  const std::vector<bool> pinned = pinned_blobs(net, keep_blobs);
  // On the CPU storage can be a view into an arena; a GPU's is its own.
  const bool on_cpu =
      std::none_of(net.layers().begin(), net.layers().end(),
                   [](const std::shared_ptr<Layer>& layer) { return layer->device().is_gpu(); });
  // A TEST net runs forward only (Net::backward refuses once it shares data),
  // though its layers with parameters are marked as needing backward.
  if (net.phase() == TEST) {
    plan_part(net, Part::kData, pinned, on_cpu, &plan.data_buffers, &plan.data_arena_bytes, &plan);
    return plan;
  }
  plan_part(net, Part::kDiff, pinned, on_cpu, &plan.diff_buffers, &plan.diff_arena_bytes, &plan);
  // What the layers' backward passes touch is declared for their CPU code.
  if (on_cpu) {
    plan_part(net, Part::kData, pinned, true, &plan.data_buffers, &plan.data_arena_bytes, &plan);
  }
  return plan;
}

namespace {

// One host allocation that views (SyncedMemory over part of it) share; it
// lives while any blob holds one of its views.
struct Arena {
  explicit Arena(std::size_t bytes) : host(allocate_aligned_host(bytes)) {}
  ~Arena() {
    views.clear();
    free_aligned_host(host);
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  void* host;
  std::vector<std::unique_ptr<SyncedMemory>> views;
};

std::shared_ptr<Arena> apply_part(const Net& net, const std::vector<NetMemoryPlan::Buffer>& buffers,
                                  std::size_t arena_bytes, Part part) {
  std::shared_ptr<Arena> arena;
  if (arena_bytes > 0) arena = std::make_shared<Arena>(arena_bytes);
  for (const NetMemoryPlan::Buffer& buffer : buffers) {
    if (buffer.blobs.empty()) continue;  // a place for packed values
    std::shared_ptr<SyncedMemory> memory;
    if (buffer.offset >= 0) {
      XTRAIN_ASSERT(arena && static_cast<std::size_t>(buffer.offset) + buffer.bytes <= arena_bytes);
      arena->views.push_back(std::make_unique<SyncedMemory>(buffer.bytes));
      arena->views.back()->set_cpu_data(static_cast<char*>(arena->host) + buffer.offset);
      memory = std::shared_ptr<SyncedMemory>(arena, arena->views.back().get());  // aliasing
    } else {
      memory = std::make_shared<SyncedMemory>(buffer.bytes);
    }
    for (int blob : buffer.blobs) {
      if (part == Part::kData) {
        net.blobs()[blob]->use_data_memory(memory);
      } else {
        net.blobs()[blob]->use_diff_memory(memory);
      }
    }
  }
  return arena;
}

}  // namespace

AppliedNetMemoryPlan apply_net_memory_plan(const Net& net, const NetMemoryPlan& plan) {
  apply_part(net, plan.diff_buffers, plan.diff_arena_bytes, Part::kDiff);
  std::shared_ptr<Arena> data_arena =
      apply_part(net, plan.data_buffers, plan.data_arena_bytes, Part::kData);
  AppliedNetMemoryPlan applied;
  if (data_arena) applied.data_arena_host = static_cast<char*>(data_arena->host);
  applied.data_arena = std::move(data_arena);
  return applied;
}

}  // namespace xtrain

#include "core/net_memory_plan.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>

#include "core/aligned_host_memory.hpp"
#include "core/engine_hooks.hpp"
#include "core/net_memory_units.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

using namespace memory_plan;  // the storage units and walks of core/net_memory_units.hpp

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

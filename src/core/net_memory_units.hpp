// The storage units of a Net's memory plan (core/net_memory_plan.hpp) and
// their lives: blobs that hold one SyncedMemory form a unit, and a walk over
// the schedule -- forward, backward, or a training iteration's both -- finds
// the steps that touch each. Internal to the plan's files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/net_memory_placement.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {

class Blob;
class Net;

namespace memory_plan {

enum class Part { kData, kDiff };

const std::shared_ptr<SyncedMemory>& storage_of(const Blob& blob, Part part);

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

// The units of `part`'s storage, each with no life yet.
Units group_by_storage(const Net& net, Part part);

// The walks record each unit's life over the schedule's steps.
// The backward pass: each layer that runs reads its tops' diffs and writes
// the diffs of the bottoms it propagates to.
void walk_backward(const Net& net, Units* units);
// The forward pass: each layer reads its bottoms' data and writes its tops'.
void walk_forward(const Net& net, Units* units);
// A training iteration as data sees it: the forward pass, then the backward
// pass, in which each layer that runs touches the values of the bottoms and
// tops it says it does (EngineHooks::backward_touches_*_data).
void walk_forward_then_backward(const Net& net, Units* units);

// The blobs whose storage stays their own whatever the schedule says.
std::vector<bool> pinned_blobs(const Net& net, const std::vector<std::string>& keep_blobs);

// Marks the units that may share storage (StorageUnit::may_share).
void decide_sharing(const Net& net, Part part, const std::vector<bool>& pinned, Units* units);

}  // namespace memory_plan
}  // namespace xtrain

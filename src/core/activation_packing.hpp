// The Net's side of packing 16-bit activations between the passes
// (core/net_memory_plan.hpp, NetMemoryPlan::packs): after a layer's forward,
// the values whose storage serves others until backward go into their
// packed place in the data arena; before a layer's backward they come back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/net_memory_plan.hpp"
#include "xtrain/blob.hpp"

namespace xtrain {

// For tests: after packing, overwrite the values' own place with nan, as
// the blobs that share it would, so that a run shows whether every packed
// value comes back.
void set_poison_packed_places_for_testing(bool poison);

class ActivationPacking {
 public:
  ActivationPacking(const Net& net, const NetMemoryPlan& plan, const AppliedNetMemoryPlan& applied);

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  void after_forward(int layer);
  void before_backward(int layer);

 private:
  struct Entry {
    const Blob* blob = nullptr;
    const SyncedMemory* storage = nullptr;  // the blob's storage as planned
    std::uint16_t* packed = nullptr;
    std::size_t values = 0;
    NumberType type = NumberType::kFloat32;
    bool holds_values = false;  // packed this iteration, not yet unpacked
  };
  std::vector<Entry> entries_;
  std::vector<std::vector<int>> after_forward_;
  std::vector<std::vector<int>> before_backward_;
  std::shared_ptr<void> arena_;  // where the packed places are
};

}  // namespace xtrain

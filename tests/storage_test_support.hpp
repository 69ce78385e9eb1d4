// Which blobs' storages are one, for tests of the memory plan: the plan
// gives units views into one arena (different SyncedMemory objects over
// overlapping host addresses) on the CPU and shared buffers on a GPU, so
// "the same storage" means the same object or overlapping host addresses.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "xtrain/net.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain::testing {

inline bool storages_overlap(const SyncedMemory* a, const SyncedMemory* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  const char* pa = static_cast<const char*>(a->host_pointer());
  const char* pb = static_cast<const char*>(b->host_pointer());
  if (pa == nullptr || pb == nullptr) return false;
  return pa < pb + b->size() && pb < pa + a->size();
}

inline bool blobs_share_storage(const Net& net, int a, int b, bool diff) {
  auto storage = [&](int blob) {
    return diff ? net.blobs()[blob]->diff_memory().get() : net.blobs()[blob]->data_memory().get();
  };
  return storages_overlap(storage(a), storage(b));
}

// The bytes the net's blobs' data (or diffs) take, each storage once: arena
// views by the union of their host addresses, other storage by size.
inline std::size_t blob_storage_bytes(const Net& net, bool diff) {
  std::set<const SyncedMemory*> seen;
  std::vector<std::pair<const char*, const char*>> ranges;
  std::size_t bytes = 0;
  for (const auto& blob : net.blobs()) {
    const SyncedMemory* memory = diff ? blob->diff_memory().get() : blob->data_memory().get();
    if (memory == nullptr || !seen.insert(memory).second) continue;
    const char* host = static_cast<const char*>(memory->host_pointer());
    if (host == nullptr) {
      bytes += memory->size();
    } else {
      ranges.emplace_back(host, host + memory->size());
    }
  }
  std::sort(ranges.begin(), ranges.end());
  const char* covered_to = nullptr;
  for (const auto& [begin, end] : ranges) {
    const char* from = covered_to != nullptr && covered_to > begin ? covered_to : begin;
    if (end > from) bytes += static_cast<std::size_t>(end - from);
    if (covered_to == nullptr || end > covered_to) covered_to = end;
  }
  return bytes;
}

}  // namespace xtrain::testing

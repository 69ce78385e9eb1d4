#include "core/net_memory_placement.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "xtrain/error.hpp"

namespace xtrain {

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

std::vector<std::ptrdiff_t> assign_arena_offsets(const std::vector<Lifetime>& lives,
                                                 const std::vector<std::size_t>& bytes,
                                                 const std::vector<bool>& eligible,
                                                 std::size_t* arena_bytes) {
  XTRAIN_ASSERT(lives.size() == bytes.size() && bytes.size() == eligible.size());
  constexpr std::size_t kAlignment = 64;
  auto rounded = [&](int unit) { return (bytes[unit] + kAlignment - 1) / kAlignment * kAlignment; };
  std::vector<int> order(lives.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (bytes[a] != bytes[b]) return bytes[a] > bytes[b];
    return lives[a].first.first < lives[b].first.first;
  });
  std::vector<std::ptrdiff_t> offsets(lives.size(), -1);
  std::vector<int> placed;
  *arena_bytes = 0;
  for (int unit : order) {
    if (!eligible[unit]) continue;
    // The places taken by units live at the same time, by offset.
    std::vector<std::pair<std::size_t, std::size_t>> taken;
    for (int other : placed) {
      if (lives[other].overlaps(lives[unit])) {
        taken.emplace_back(static_cast<std::size_t>(offsets[other]),
                           static_cast<std::size_t>(offsets[other]) + rounded(other));
      }
    }
    std::sort(taken.begin(), taken.end());
    const std::size_t size = rounded(unit);
    std::size_t best_offset = 0;
    std::size_t best_gap = std::numeric_limits<std::size_t>::max();
    std::size_t end_of_taken = 0;  // the end of everything below the gap
    for (const auto& [begin, end] : taken) {
      if (begin >= end_of_taken + size && begin - end_of_taken < best_gap) {
        best_gap = begin - end_of_taken;
        best_offset = end_of_taken;
      }
      end_of_taken = std::max(end_of_taken, end);
    }
    if (best_gap == std::numeric_limits<std::size_t>::max()) best_offset = end_of_taken;
    offsets[unit] = static_cast<std::ptrdiff_t>(best_offset);
    *arena_bytes = std::max(*arena_bytes, best_offset + size);
    placed.push_back(unit);
  }
  return offsets;
}

}  // namespace xtrain

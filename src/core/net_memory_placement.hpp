// Where storage units go, given when each is live: into shared buffers
// (each as large as its largest unit) or at offsets in one arena. Pure
// functions of the lifetimes and sizes, used by the memory plan
// (net_memory_plan.hpp) and tested on their own.
#pragma once

#include <cstddef>
#include <vector>

namespace xtrain {

// A closed interval of schedule steps during which a storage unit is live.
struct LiveInterval {
  int first = -1;
  int last = -1;
  bool overlaps(const LiveInterval& other) const {
    return first <= other.last && other.first <= last;
  }
};

// When a unit is live: one interval, or two for values written again in
// backward (`second.first` is -1 when there is no second).
struct Lifetime {
  LiveInterval first;
  LiveInterval second;
  bool overlaps(const Lifetime& other) const;
};

// First-fit of units into buffers, largest first: returns each unit's buffer
// (-1 for the units not eligible) and the buffers' sizes in *buffer_bytes.
// Units in one buffer have pairwise disjoint lifetimes.
std::vector<int> assign_shared_buffers(const std::vector<Lifetime>& lives,
                                       const std::vector<std::size_t>& bytes,
                                       const std::vector<bool>& eligible,
                                       std::vector<std::size_t>* buffer_bytes);

// Places of units in one arena, largest first, each at the lowest offset of
// the smallest gap that takes it among the units whose lifetimes overlap
// its own (best fit), sizes rounded up to 64 bytes: returns each unit's
// offset (-1 for the units not eligible) and the arena's size in
// *arena_bytes. Units whose places overlap have disjoint lifetimes.
std::vector<std::ptrdiff_t> assign_arena_offsets(const std::vector<Lifetime>& lives,
                                                 const std::vector<std::size_t>& bytes,
                                                 const std::vector<bool>& eligible,
                                                 std::size_t* arena_bytes);

}  // namespace xtrain

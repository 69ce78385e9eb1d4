// Loops split across the CPU thread pool (see xtrain/cpu_threads.hpp): the
// one OpenMP pool that oneDNN and OpenBLAS use too, so nothing oversubscribes
// the cores. Internal to libxtrain.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xtrain {

// Below this many float operations a loop stays on the calling thread:
// waking the pool costs more than it saves (~10 us with passive waiting).
constexpr std::size_t kMinParallelWork = 1 << 15;

// body(i) for i in [0, count), in static contiguous chunks, one per thread.
// `work_per_item` (roughly, float operations of one body call) decides
// whether splitting pays. Iterations must be independent.
template <typename Body>
inline void parallel_for(std::int64_t count, std::size_t work_per_item, Body body) {
  const bool split =
      count > 1 && static_cast<std::size_t>(count) * work_per_item >= kMinParallelWork;
#pragma omp parallel for schedule(static) if (split)
  for (std::int64_t i = 0; i < count; ++i) body(i);
}

}  // namespace xtrain

// Elementwise passes over long arrays, split across the CPU thread pool in
// blocks: body(begin, end) for consecutive [begin, end) ranges covering
// [0, count). A block (64 KiB of floats) stays in cache while a body makes
// several sweeps over it, e.g. summing several inputs into one output.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/parallel_loop.hpp"

namespace xtrain {

constexpr std::size_t kValuesPerBlock = 1 << 14;

// `work_per_value`: roughly the float operations per value, for
// parallel_for's decision whether splitting pays.
template <typename Body>
inline void for_each_block(std::size_t count, std::size_t work_per_value, Body body) {
  const auto blocks = static_cast<std::int64_t>((count + kValuesPerBlock - 1) / kValuesPerBlock);
  parallel_for(blocks, kValuesPerBlock * work_per_value, [&](std::int64_t b) {
    const std::size_t begin = static_cast<std::size_t>(b) * kValuesPerBlock;
    body(begin, std::min(count, begin + kValuesPerBlock));
  });
}

}  // namespace xtrain

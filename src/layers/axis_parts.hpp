// The rows that Concat and Slice copy. Along `axis`, the whole blob
// (Concat's top, Slice's bottom) is outer rows of whole_block =
// whole.shape(axis) * inner values, and part i (Concat's bottom i, Slice's
// top i) holds, in each row, block = parts[i]->shape(axis) * inner values
// at `offset`, the parts one after another.
#pragma once

#include <cstddef>
#include <vector>

#include "xtrain/blob.hpp"

namespace xtrain {

// body(i, block, whole_block, offset) for every part i, in order.
template <typename Body>
void for_each_axis_part(const Blob& whole, const std::vector<Blob*>& parts, int axis,
                        std::size_t inner, Body body) {
  const std::size_t whole_block = whole.shape(axis) * inner;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t block = parts[i]->shape(axis) * inner;
    body(i, block, whole_block, offset);
    offset += block;
  }
}

}  // namespace xtrain

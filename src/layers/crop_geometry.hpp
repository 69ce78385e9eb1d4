// Where Crop reads: the top is cut into lines along its last axis, and line l
// (in memory order) starts in the bottom at
//   offsets[last] + sum_{a < last} (l_a + offsets[a]) * strides[a]
// with l_a the line's index on axis a. Shared by the CPU loop and the CUDA
// kernel (src/layers/copy_kernels.cu); passed to the kernel by value.
#pragma once

#include <cstddef>

#include "core/elementwise_ops.hpp"

namespace xtrain {

struct CropGeometry {
  static constexpr int kMaxAxes = 32;
  int axes = 0;
  std::size_t top_shape[kMaxAxes] = {};
  std::size_t offsets[kMaxAxes] = {};  // of bottom[0], per axis
  std::size_t strides[kMaxAxes] = {};  // of bottom[0], in values

  XTRAIN_HOST_DEVICE std::size_t line_length() const { return top_shape[axes - 1]; }

  XTRAIN_HOST_DEVICE std::size_t line_start(std::size_t line) const {
    std::size_t rest = line;
    std::size_t start = offsets[axes - 1];
    for (int a = axes - 2; a >= 0; --a) {
      const std::size_t size = top_shape[a];
      start += (rest % size + offsets[a]) * strides[a];
      rest /= size;
    }
    return start;
  }
};

}  // namespace xtrain

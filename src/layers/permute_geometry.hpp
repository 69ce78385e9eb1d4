// Where Permute reads: top position j, written as coordinates (c_0, ...,
// c_{n-1}) of the top's shape, takes the bottom value at
//   sum_i c_i * bottom_strides[order[i]]
// since the top's axis i is the bottom's axis order[i]. Shared by the CPU
// loop and the CUDA kernels (src/layers/detection_kernels.cu); passed by value.
#pragma once

#include <cstddef>

#include "core/host_device.hpp"

namespace xtrain {

struct PermuteGeometry {
  static constexpr int kMaxAxes = 32;
  int axes = 0;
  int order[kMaxAxes] = {};
  std::size_t bottom_strides[kMaxAxes] = {};
  std::size_t top_strides[kMaxAxes] = {};

  XTRAIN_HOST_DEVICE std::size_t bottom_index(std::size_t top_index) const {
    std::size_t rest = top_index;
    std::size_t index = 0;
    for (int i = 0; i < axes; ++i) {
      index += rest / top_strides[i] * bottom_strides[order[i]];
      rest %= top_strides[i];
    }
    return index;
  }
};

}  // namespace xtrain

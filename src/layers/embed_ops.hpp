// Embed's index rule, shared by the CPU loop and the CUDA kernels
// (src/layers/copy_kernels.cu): a stored float is a valid index when it is an
// integer in [0, input_dim).
#pragma once

#include <cmath>

#include "core/elementwise_ops.hpp"

namespace xtrain::ops {

XTRAIN_HOST_DEVICE inline bool embed_index_valid(float value, int input_dim) {
  return value >= 0 && value < static_cast<float>(input_dim) && value == floorf(value);
}

}  // namespace xtrain::ops

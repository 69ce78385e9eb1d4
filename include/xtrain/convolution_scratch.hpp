// The host memory the CPU convolutions share between layers, for a memory
// count such as `xtrain time`'s (xtrain/net_memory_count.hpp counts what the
// net itself holds).
#pragma once

#include <cstddef>

#include "xtrain/export.hpp"

namespace xtrain {

// Host bytes of the scratch buffers all threads' oneDNN convolutions share
// (the activations reordered at a primitive's boundary); 0 without oneDNN.
// oneDNN's own scratchpads are not in it.
XTRAIN_API std::size_t onednn_convolution_scratch_bytes();

}  // namespace xtrain

// The host memory the CPU convolutions and bf16 inner products share between
// layers, for a memory count such as `xtrain time`'s
// (xtrain/net_memory_count.hpp counts what the net itself holds).
#pragma once

#include <cstddef>

#include "xtrain/export.hpp"

namespace xtrain {

// Host bytes of the scratch buffers all threads' oneDNN convolutions and
// bf16 inner products share (the activations reordered at a primitive's
// boundary, and the primitives' own working memory, their scratchpads);
// 0 without oneDNN.
XTRAIN_API std::size_t onednn_convolution_scratch_bytes();

}  // namespace xtrain

// The host memory the CPU convolutions and inner products share between
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

// Host bytes of all threads' copies of product operands rounded to a
// 16-bit type for kernels that multiply in fp32 (bf16 without bf16
// instructions or where the timed search took an fp32 kernel, fp16 on every
// CPU), shared by all layers as above.
XTRAIN_API std::size_t rounded_operand_scratch_bytes();

}  // namespace xtrain

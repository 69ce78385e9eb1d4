// CUDA launchers that draw random numbers on the device, with the functors
// the CPU paths apply (so the two draw the same bits): Dropout's mask
// (src/layers/dropout_mask.hpp) and per-element random fills
// (src/core/random_fill.hpp). Device pointers; each runs on `stream`, by
// default (nullptr) the calling thread's stream. Compiled only in CUDA builds.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/random_fill.hpp"
#include "layers/dropout_mask.hpp"

namespace xtrain::cuda {

// mask[j * per_item + e] for the local items j < items, which are the global
// items first_item + j.
void dropout_draw_mask(const DropoutMask& draw, std::uint64_t first_item, std::size_t items,
                       std::size_t per_item, unsigned* mask, cudaStream_t stream = nullptr);

// out[0..n).
void philox_fill(const PhiloxFill& fill, float* out, std::size_t n, cudaStream_t stream = nullptr);

}  // namespace xtrain::cuda

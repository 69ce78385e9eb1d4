// CUDA launchers of the layers that move values by an index map: Crop, Tile
// and Embed. Device pointers; the calling thread's stream. Compiled only in
// CUDA builds.
#pragma once

#include <cstddef>

#include "layers/crop_geometry.hpp"

namespace xtrain::cuda {

// Crop: top[j] = bottom[line_start(j / L) + j % L] (forward), and the reverse
// assignment into a bottom diff the caller has zeroed (backward); n = top count.
void crop_forward(const float* bottom, float* top, std::size_t n, const CropGeometry& geometry);
void crop_backward(const float* top_diff, float* bottom_diff, std::size_t n,
                   const CropGeometry& geometry);

// Tile backward: dx[o, i] = sum over t in order of dy[o, t, i] (Add).
void tile_backward(const float* dy, float* dx, std::size_t outer, int tiles, std::size_t inner);

// Embed: the first position whose value is not a valid index (-1: none);
// waits for the answer. scratch: cuda::kLossScratchFloats floats of device memory.
long long embed_first_invalid_index(const float* indices, std::size_t positions, int input_dim,
                                    void* scratch);
// y[p, n] = weights[index_p, n]
void embed_forward(const float* indices, const float* weights, float* y, std::size_t positions,
                   int num_output);
// weight_diff[index_p, n] += dy[p, n] over p in order (one thread per n: deterministic).
void embed_weight_backward(const float* indices, const float* dy, float* weight_diff,
                           std::size_t positions, int num_output);

}  // namespace xtrain::cuda

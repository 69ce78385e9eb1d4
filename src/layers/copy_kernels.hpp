// CUDA launchers of the layers that move values by an index map: Crop, Tile
// and Embed (and BatchReindex, Filter). Device pointers; the calling thread's stream. Compiled only
// in CUDA builds.
#pragma once

#include <cstddef>

#include "layers/crop_geometry.hpp"
#include "layers/row_segments.hpp"

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
// The segmented sums of layers/row_segments.hpp: target[r, j] += source[p, j]
// over the positions p of row r, in increasing p (one thread per segment and
// column); `plan` points to device memory.
void add_row_segments(const ops::RowSegments& plan, const float* source, float* target);

}  // namespace xtrain::cuda

// CUDA launchers of the SSD layers that compute on the device: Permute (a
// copy through layers/permute_geometry.hpp) and Normalize (the functions of
// layers/normalize_ops.hpp: one thread per element or short group, grid-wide
// reductions for the long sums).
// Device pointers; the calling thread's stream. Compiled only in CUDA builds.
#pragma once

#include <cstddef>

#include "layers/normalize_ops.hpp"
#include "layers/permute_geometry.hpp"

namespace xtrain::cuda {

// top[j] = bottom[geometry.bottom_index(j)] for j < n (the top's count).
void permute_forward(const float* bottom, float* top, std::size_t n,
                     const PermuteGeometry& geometry);
// bottom_diff[geometry.bottom_index(j)] = top_diff[j]: every bottom element once.
void permute_backward(const float* top_diff, float* bottom_diff, std::size_t n,
                      const PermuteGeometry& geometry);

// norms[g] for every group, then y.
void normalize_forward(const ops::NormalizeGeometry& geometry, float eps, const float* x,
                       const float* scale, float* norms, float* y);
// dots[g] for every group (scratch), then dx.
void normalize_backward(const ops::NormalizeGeometry& geometry, const float* x, const float* dy,
                        const float* scale, const float* norms, float* dots, float* dx);
// scale_diff[c] += the channel's sum of dy x / n (scale_diff[0] += the sum
// over every element when the scale is shared); nothing for an empty bottom.
void normalize_scale_backward(const ops::NormalizeGeometry& geometry, const float* x,
                              const float* dy, const float* norms, float* scale_diff);

}  // namespace xtrain::cuda

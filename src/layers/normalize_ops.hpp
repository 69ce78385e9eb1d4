// The math of the Normalize layer, shared by its CPU loops and its CUDA
// kernels (src/layers/detection_kernels.cu): each function computes one value
// (a group's norm, one output, one channel's scale gradient).
//
// The CPU adds each sum in float, in order. The GPU computes per-element
// values with the same functions, but the long sums (a whole item's norm and
// dot with across_spatial; the scale gradient over every item and position)
// as grid-wide reductions in double (core/reduction_tiling.hpp, the
// Reductions and finishes at the end of this file): one thread per sum
// would leave an H100 nearly idle (SSD's conv4_3: 512 channels, one thread
// each over N x 38 x 38 values). The short sums (a position's C channels,
// across_spatial: false) stay one thread per group, as on the CPU.
//
// A group is what one L2 norm covers: a whole item (across_spatial), or the
// C channels at one spatial position of an item. With s_c the scale of x's
// channel (one shared scale or one per channel), n the group's norm:
//   n      = sqrt(eps + sum over the group of x^2)
//   y      = s_c x / n
//   dE/dx  = s_c dy / n - x / n^3 * sum over the group of (dy s_c' x')
//   dE/ds_c = sum over the elements of channel c (all items) of dy x / n
#pragma once

#include <cmath>
#include <cstddef>

#include "core/host_device.hpp"
#include "core/reduction_tiling.hpp"

namespace xtrain::ops {

struct NormalizeGeometry {
  std::size_t num = 0;
  std::size_t channels = 0;
  std::size_t spatial = 0;  // H * W (1 for a 2-d bottom)
  bool across_spatial = true;
  bool channel_shared = true;

  XTRAIN_HOST_DEVICE std::size_t groups() const { return across_spatial ? num : num * spatial; }
  XTRAIN_HOST_DEVICE std::size_t group_size() const {
    return across_spatial ? channels * spatial : channels;
  }
  // The k-th element of group g, as an index into the bottom.
  XTRAIN_HOST_DEVICE std::size_t element(std::size_t g, std::size_t k) const {
    if (across_spatial) return g * channels * spatial + k;
    return g / spatial * channels * spatial + g % spatial + k * spatial;
  }
  XTRAIN_HOST_DEVICE std::size_t group_of(std::size_t index) const {
    const std::size_t item = index / (channels * spatial);
    return across_spatial ? item : item * spatial + index % spatial;
  }
  XTRAIN_HOST_DEVICE std::size_t channel_of(std::size_t index) const {
    return index / spatial % channels;
  }
  XTRAIN_HOST_DEVICE float scale_of(const float* scale, std::size_t index) const {
    return channel_shared ? scale[0] : scale[channel_of(index)];
  }
};

XTRAIN_HOST_DEVICE inline float normalize_group_norm(const NormalizeGeometry& geometry,
                                                     const float* x, std::size_t g, float eps) {
  float sum = eps;
  for (std::size_t k = 0; k < geometry.group_size(); ++k) {
    const float v = x[geometry.element(g, k)];
    sum += v * v;
  }
  return sqrtf(sum);
}

XTRAIN_HOST_DEVICE inline float normalize_forward(const NormalizeGeometry& geometry, const float* x,
                                                  const float* scale, const float* norms,
                                                  std::size_t i) {
  return geometry.scale_of(scale, i) * x[i] / norms[geometry.group_of(i)];
}

// sum over group g of dy s x
XTRAIN_HOST_DEVICE inline float normalize_group_dot(const NormalizeGeometry& geometry,
                                                    const float* x, const float* dy,
                                                    const float* scale, std::size_t g) {
  float sum = 0;
  for (std::size_t k = 0; k < geometry.group_size(); ++k) {
    const std::size_t i = geometry.element(g, k);
    sum += dy[i] * geometry.scale_of(scale, i) * x[i];
  }
  return sum;
}

XTRAIN_HOST_DEVICE inline float normalize_backward(const NormalizeGeometry& geometry,
                                                   const float* x, const float* dy,
                                                   const float* scale, const float* norms,
                                                   const float* dots, std::size_t i) {
  const std::size_t g = geometry.group_of(i);
  const float n = norms[g];
  return geometry.scale_of(scale, i) * dy[i] / n - x[i] * dots[g] / (n * n * n);
}

// sum over the elements of channel c of dy x / n, items and positions in order
XTRAIN_HOST_DEVICE inline float normalize_channel_scale_gradient(const NormalizeGeometry& geometry,
                                                                 const float* x, const float* dy,
                                                                 const float* norms,
                                                                 std::size_t c) {
  float sum = 0;
  for (std::size_t item = 0; item < geometry.num; ++item) {
    for (std::size_t s = 0; s < geometry.spatial; ++s) {
      const std::size_t i = (item * geometry.channels + c) * geometry.spatial + s;
      sum += dy[i] * x[i] / norms[geometry.group_of(i)];
    }
  }
  return sum;
}

// ---- The GPU's grid-wide reductions (grid_reduction.cuh's Reductions and
// Finish functors; tests/normalize_embed_kernels_test.cpp runs them on the host).

// Whole-item groups (across_spatial) as the channels of a (1, num, C x S)
// array: value k of "channel" g is element g C S + k.
inline reduction::ChannelTiling normalize_group_tiling(const NormalizeGeometry& geometry) {
  return reduction::ChannelTiling::plan(1, geometry.num, geometry.channels * geometry.spatial);
}

// The scale gradient: one sum per channel of the (num, C, S) array, or one
// over everything for a shared scale.
inline reduction::ChannelTiling normalize_scale_tiling(const NormalizeGeometry& geometry) {
  if (geometry.channel_shared) {
    return reduction::ChannelTiling::plan(1, 1,
                                          geometry.num * geometry.channels * geometry.spatial);
  }
  return reduction::ChannelTiling::plan(geometry.num, geometry.channels, geometry.spatial);
}

// sum of x^2 (each square in double)
struct NormalizeSquaresOf {
  using Partial = double;
  const float* x;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    const double v = x[offset];
    sum += v * v;
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// sum of dy s x (each term as the CPU's, in float)
struct NormalizeScaledDotsOf {
  using Partial = double;
  NormalizeGeometry geometry;
  const float* x;
  const float* dy;
  const float* scale;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    sum += dy[offset] * geometry.scale_of(scale, offset) * x[offset];
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// sum of dy x / n (each term as the CPU's, in float)
struct NormalizeScaleGradientOf {
  using Partial = double;
  NormalizeGeometry geometry;
  const float* x;
  const float* dy;
  const float* norms;
  XTRAIN_HOST_DEVICE Partial identity() const { return 0; }
  XTRAIN_HOST_DEVICE void add(Partial& sum, std::size_t, std::size_t offset) const {
    sum += dy[offset] * x[offset] / norms[geometry.group_of(offset)];
  }
  XTRAIN_HOST_DEVICE Partial combine(Partial a, Partial b) const { return a + b; }
};

// norms[g] = sqrt(eps + sum of squares)
struct StoreNorm {
  float* norms;
  float eps;
  XTRAIN_HOST_DEVICE void operator()(std::size_t g, double squares) const {
    norms[g] = sqrtf(static_cast<float>(eps + squares));
  }
};

struct StoreSum {
  float* out;
  XTRAIN_HOST_DEVICE void operator()(std::size_t i, double total) const {
    out[i] = static_cast<float>(total);
  }
};

// Caffe accumulates parameter gradients.
struct AddSum {
  float* out;
  XTRAIN_HOST_DEVICE void operator()(std::size_t i, double total) const {
    out[i] += static_cast<float>(total);
  }
};

}  // namespace xtrain::ops

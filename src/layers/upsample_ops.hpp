// Upsample's index math, shared by its CPU loop and its CUDA kernels
// (src/layers/upsample_kernels.cu). Nearest neighbour by an integer factor s,
// N x C x H x W -> N x C x sH x sW:
//
//   top[n, c, y, x]      = bottom[n, c, floor(y / s), floor(x / s)]
//   dbottom[n, c, h, w]  = sum over a, b in [0, s) of dtop[n, c, s h + a, s w + b]
//
// Forward runs once per top element, backward once per bottom element (a
// gather: no two iterations write one value, and each block is added row by
// row on both devices).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace xtrain::ops {

struct UpsampleGeometry {
  std::int64_t height = 0;  // the bottom's H
  std::int64_t width = 0;   // the bottom's W
  std::int64_t scale = 1;

  // The bottom element that top element `top_index` copies.
  XTRAIN_HOST_DEVICE std::int64_t bottom_index(std::int64_t top_index) const {
    const std::int64_t top_width = width * scale;
    const std::int64_t top_height = height * scale;
    const std::int64_t x = top_index % top_width;
    const std::int64_t rest = top_index / top_width;
    const std::int64_t y = rest % top_height;
    const std::int64_t plane = rest / top_height;
    return (plane * height + y / scale) * width + x / scale;
  }

  // The top element at the upper-left corner of bottom element
  // `bottom_index`'s s x s block.
  XTRAIN_HOST_DEVICE std::int64_t block_corner(std::int64_t bottom_index) const {
    const std::int64_t w = bottom_index % width;
    const std::int64_t rest = bottom_index / width;
    const std::int64_t h = rest % height;
    const std::int64_t plane = rest / height;
    return (plane * height * scale + h * scale) * width * scale + w * scale;
  }
};

struct UpsampleForward {
  static constexpr std::size_t kWorkPerIndex = 1;
  UpsampleGeometry geometry;
  const float* bottom;
  float* top;

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    top[index] = bottom[geometry.bottom_index(index)];
  }
};

struct UpsampleBackward {
  static constexpr std::size_t kWorkPerIndex = 4;
  UpsampleGeometry geometry;
  const float* top_diff;
  float* bottom_diff;

  XTRAIN_HOST_DEVICE void operator()(std::int64_t index) const {
    const std::int64_t top_width = geometry.width * geometry.scale;
    const float* row = top_diff + geometry.block_corner(index);
    float sum = 0.0f;
    for (std::int64_t a = 0; a < geometry.scale; ++a, row += top_width) {
      for (std::int64_t b = 0; b < geometry.scale; ++b) sum += row[b];
    }
    bottom_diff[index] = sum;
  }
};

}  // namespace xtrain::ops

// The box geometry of object detection, defined once for the annotated data
// (batch samplers' IoU constraints, crops that re-project boxes) and the
// detection layers (prior matching, decoding, non-maximum suppression), on
// both devices.
//
// A box is (xmin, ymin, xmax, ymax) with xmin <= xmax and ymin <= ymax when it
// is valid. Coordinates are either normalized (fractions of the image, as SSD
// stores them: a box's area is width * height) or pixel indices of an image
// (Caffe's SSD counts both end pixels there: width = xmax - xmin + 1), which
// is what `normalized` selects. An inverted box has area 0 and overlaps
// nothing.
//
//   area(b)                = (xmax - xmin) * (ymax - ymin)          normalized
//                          = (xmax - xmin + 1) * (ymax - ymin + 1)  pixels
//   intersection(a, b)     = the box both cover, inverted when they do not meet
//   jaccard_overlap(a, b)  = area(a ∩ b) / (area(a) + area(b) - area(a ∩ b))
//   clipped(b)             = b with every coordinate clamped to [0, 1]
#pragma once

#include "core/host_device.hpp"

namespace xtrain::detection {

struct NormalizedBox {
  float xmin = 0;
  float ymin = 0;
  float xmax = 0;
  float ymax = 0;
};

XTRAIN_HOST_DEVICE inline bool is_inverted(const NormalizedBox& b) {
  return b.xmax < b.xmin || b.ymax < b.ymin;
}

XTRAIN_HOST_DEVICE inline float box_area(const NormalizedBox& b, bool normalized = true) {
  if (is_inverted(b)) return 0.0f;
  const float extra = normalized ? 0.0f : 1.0f;
  return (b.xmax - b.xmin + extra) * (b.ymax - b.ymin + extra);
}

// The part of the plane both boxes cover; inverted (area 0) when they are
// apart, which callers need not test for separately.
XTRAIN_HOST_DEVICE inline NormalizedBox box_intersection(const NormalizedBox& a,
                                                         const NormalizedBox& b) {
  if (b.xmin > a.xmax || b.xmax < a.xmin || b.ymin > a.ymax || b.ymax < a.ymin) {
    return NormalizedBox{0.0f, 0.0f, -1.0f, -1.0f};
  }
  return NormalizedBox{a.xmin > b.xmin ? a.xmin : b.xmin, a.ymin > b.ymin ? a.ymin : b.ymin,
                       a.xmax < b.xmax ? a.xmax : b.xmax, a.ymax < b.ymax ? a.ymax : b.ymax};
}

XTRAIN_HOST_DEVICE inline float jaccard_overlap(const NormalizedBox& a, const NormalizedBox& b,
                                                bool normalized = true) {
  const float inter = box_area(box_intersection(a, b), normalized);
  if (inter <= 0.0f) return 0.0f;
  return inter / (box_area(a, normalized) + box_area(b, normalized) - inter);
}

XTRAIN_HOST_DEVICE inline float clamp_to_unit(float v) {
  return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

XTRAIN_HOST_DEVICE inline NormalizedBox clipped(const NormalizedBox& b) {
  return NormalizedBox{clamp_to_unit(b.xmin), clamp_to_unit(b.ymin), clamp_to_unit(b.xmax),
                       clamp_to_unit(b.ymax)};
}

}  // namespace xtrain::detection

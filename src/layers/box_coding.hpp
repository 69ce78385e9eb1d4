// How SSD codes a box as four offsets from a prior box, and back: the
// targets MultiBoxLoss regresses to (encode) and the boxes DetectionOutput
// reports (decode), one host/device definition for both.
//
// With a prior p (width pw, height ph, centre pcx, pcy), a box b and the
// prior's variances v0..v3 (all 1 when the variance is "encoded in the
// target", i.e. the net learns the scaled offsets itself):
//
//   CORNER       t = ((bxmin - pxmin) / v0, (bymin - pymin) / v1,
//                     (bxmax - pxmax) / v2, (bymax - pymax) / v3)
//   CORNER_SIZE  t = as CORNER, the x offsets also divided by pw, the y ones by ph
//   CENTER_SIZE  t = ((bcx - pcx) / pw / v0, (bcy - pcy) / ph / v1,
//                     log(bw / pw) / v2,     log(bh / ph) / v3)
//
// and decoding inverts each (CENTER_SIZE: bw = pw exp(v2 t2), b's corners
// are its centre -/+ half its size). CENTER_SIZE needs boxes and priors of
// positive size (the callers check); the corner codes do not.
#pragma once

#include <cmath>

#include "layers/normalized_box.hpp"

namespace xtrain::detection {

// The values of PriorBoxParameter.CodeType.
enum class BoxCode : int { kCorner = 1, kCenterSize = 2, kCornerSize = 3 };

struct BoxOffsets {
  float value[4] = {0, 0, 0, 0};
};

struct BoxVariance {
  float value[4] = {1, 1, 1, 1};
};

XTRAIN_HOST_DEVICE inline float box_width(const NormalizedBox& b) { return b.xmax - b.xmin; }
XTRAIN_HOST_DEVICE inline float box_height(const NormalizedBox& b) { return b.ymax - b.ymin; }

XTRAIN_HOST_DEVICE inline BoxOffsets encode_box(const NormalizedBox& prior,
                                                const BoxVariance& variance, BoxCode code,
                                                const NormalizedBox& box) {
  BoxOffsets t;
  const float* v = variance.value;
  if (code == BoxCode::kCenterSize) {
    const float pw = box_width(prior);
    const float ph = box_height(prior);
    const float pcx = (prior.xmin + prior.xmax) / 2;
    const float pcy = (prior.ymin + prior.ymax) / 2;
    const float bcx = (box.xmin + box.xmax) / 2;
    const float bcy = (box.ymin + box.ymax) / 2;
    t.value[0] = (bcx - pcx) / pw / v[0];
    t.value[1] = (bcy - pcy) / ph / v[1];
    t.value[2] = logf(box_width(box) / pw) / v[2];
    t.value[3] = logf(box_height(box) / ph) / v[3];
    return t;
  }
  const float sx = code == BoxCode::kCornerSize ? box_width(prior) : 1.0f;
  const float sy = code == BoxCode::kCornerSize ? box_height(prior) : 1.0f;
  t.value[0] = (box.xmin - prior.xmin) / sx / v[0];
  t.value[1] = (box.ymin - prior.ymin) / sy / v[1];
  t.value[2] = (box.xmax - prior.xmax) / sx / v[2];
  t.value[3] = (box.ymax - prior.ymax) / sy / v[3];
  return t;
}

XTRAIN_HOST_DEVICE inline NormalizedBox decode_box(const NormalizedBox& prior,
                                                   const BoxVariance& variance, BoxCode code,
                                                   const BoxOffsets& offsets) {
  const float* v = variance.value;
  const float* t = offsets.value;
  if (code == BoxCode::kCenterSize) {
    const float pw = box_width(prior);
    const float ph = box_height(prior);
    const float cx = v[0] * t[0] * pw + (prior.xmin + prior.xmax) / 2;
    const float cy = v[1] * t[1] * ph + (prior.ymin + prior.ymax) / 2;
    const float w = expf(v[2] * t[2]) * pw;
    const float h = expf(v[3] * t[3]) * ph;
    return NormalizedBox{cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2};
  }
  const float sx = code == BoxCode::kCornerSize ? box_width(prior) : 1.0f;
  const float sy = code == BoxCode::kCornerSize ? box_height(prior) : 1.0f;
  return NormalizedBox{prior.xmin + v[0] * t[0] * sx, prior.ymin + v[1] * t[1] * sy,
                       prior.xmax + v[2] * t[2] * sx, prior.ymax + v[3] * t[3] * sy};
}

}  // namespace xtrain::detection

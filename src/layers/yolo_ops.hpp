// The math of YOLOv3's detection head (Darknet's [yolo] layer), defined once
// for YoloLoss and YoloDetectionOutput, on the host and the device.
//
// Layout: a bottom of predictions is N x (A (5 + C)) x H x W for A anchors
// and C classes; channel a (5 + C) + e holds entry e of anchor a: tx, ty, tw,
// th, objectness, then the C class scores, all raw (before any logistic).
//
// Boxes are centre and size, fractions of the net's input (img_w x img_h
// pixels). The prediction of anchor (aw, ah) pixels in cell (i, j):
//   x = (i + sigmoid(tx)) / W        w = exp(tw) aw / img_w
//   y = (j + sigmoid(ty)) / H        h = exp(th) ah / img_h
// and the targets that make it equal a true box (x*, y*, w*, h*):
//   sigmoid(tx) -> x* W - i          tw -> log(w* img_w / aw)
//   sigmoid(ty) -> y* H - j          th -> log(h* img_h / ah)
//
// The loss terms, each in a raw output z against a target t:
//   logistic (tx, ty, objectness, classes): the cross-entropy
//       softplus(z) - t z = -(t ln s + (1 - t) ln(1 - s)), s = sigmoid(z);
//       gradient s - t
//   size (tw, th): 0.5 (z - t)^2; gradient z - t
// so the gradient is minus Darknet's "delta" for the same target.
#pragma once

#include <cmath>
#include <cstddef>

#include "core/elementwise_ops.hpp"
#include "core/host_device.hpp"
#include "layers/loss_ops.hpp"
#include "layers/normalized_box.hpp"

namespace xtrain::ops {

// The entries of one anchor's prediction, in channel order.
constexpr int kYoloX = 0;
constexpr int kYoloY = 1;
constexpr int kYoloW = 2;
constexpr int kYoloH = 3;
constexpr int kYoloObjectness = 4;
constexpr int kYoloFirstClass = 5;

struct YoloBox {
  float x = 0;  // centre
  float y = 0;
  float w = 0;  // size
  float h = 0;
};

// Where entry `entry` of anchor `anchor` at cell (i, j) of item `item` sits.
struct YoloLayout {
  int anchors = 0;
  int classes = 0;
  int height = 0;
  int width = 0;

  XTRAIN_HOST_DEVICE int entries() const { return kYoloFirstClass + classes; }
  XTRAIN_HOST_DEVICE std::size_t index(int item, int anchor, int entry, int j, int i) const {
    const std::size_t channel = static_cast<std::size_t>(item) * anchors * entries() +
                                static_cast<std::size_t>(anchor) * entries() + entry;
    return (channel * height + j) * width + i;
  }
  // The entry an element of the predictions holds.
  XTRAIN_HOST_DEVICE int entry_of(std::size_t index) const {
    return static_cast<int>(index / (static_cast<std::size_t>(height) * width) % entries());
  }
};

// `anchor_w`, `anchor_h`: the anchor's size as fractions of the net's input.
// `z` points at the prediction's tx; `stride` separates its entries (H W).
XTRAIN_HOST_DEVICE inline YoloBox decode_yolo_box(const float* z, std::size_t stride, int i, int j,
                                                  const YoloLayout& layout, float anchor_w,
                                                  float anchor_h) {
  YoloBox box;
  box.x = (static_cast<float>(i) + SigmoidForward{}(z[kYoloX * stride])) / layout.width;
  box.y = (static_cast<float>(j) + SigmoidForward{}(z[kYoloY * stride])) / layout.height;
  box.w = expf(z[kYoloW * stride]) * anchor_w;
  box.h = expf(z[kYoloH * stride]) * anchor_h;
  return box;
}

XTRAIN_HOST_DEVICE inline detection::NormalizedBox yolo_corners(const YoloBox& b) {
  return detection::NormalizedBox{b.x - b.w / 2, b.y - b.h / 2, b.x + b.w / 2, b.y + b.h / 2};
}

// Intersection over union of two centre-size boxes (0 when apart or
// touching, as Darknet's box_iou).
XTRAIN_HOST_DEVICE inline float yolo_box_overlap(const YoloBox& a, const YoloBox& b) {
  return detection::jaccard_overlap(yolo_corners(a), yolo_corners(b));
}

// The overlap of two boxes of sizes (w1, h1) and (w2, h2) sharing a centre:
// how Darknet picks the anchor whose shape best fits a true box.
XTRAIN_HOST_DEVICE inline float shape_overlap(float w1, float h1, float w2, float h2) {
  const float inter = (w1 < w2 ? w1 : w2) * (h1 < h2 ? h1 : h2);
  const float combined = w1 * h1 + w2 * h2 - inter;
  return combined > 0 ? inter / combined : 0.0f;
}

XTRAIN_HOST_DEVICE inline bool is_size_entry(int entry) {
  return entry == kYoloW || entry == kYoloH;
}

// The loss term of raw output z against target t (see above).
XTRAIN_HOST_DEVICE inline float yolo_term(int entry, float z, float target) {
  if (is_size_entry(entry)) return 0.5f * (z - target) * (z - target);
  // SigmoidCrossEntropyTerm is Caffe's negated cross-entropy.
  return -SigmoidCrossEntropyTerm{}(z, target);
}

XTRAIN_HOST_DEVICE inline float yolo_term_gradient(int entry, float z, float target) {
  if (is_size_entry(entry)) return z - target;
  return SigmoidForward{}(z)-target;
}

}  // namespace xtrain::ops

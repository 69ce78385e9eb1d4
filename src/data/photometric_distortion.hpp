// SSD's photometric distortion of an 8-bit B, G, R image (DistortionParameter).
//
// Each step happens with its own probability p (a U(0, 1) draw below p):
//   brightness: x + delta,             delta ~ U(-brightness_delta, brightness_delta)
//   contrast:   x * alpha,             alpha ~ U(contrast_lower, contrast_upper)
//   saturation: S * alpha in HSV,      alpha ~ U(saturation_lower, saturation_upper)
//   hue:        H + delta in HSV,      delta ~ U(-hue_delta, hue_delta), wrapping
//               around OpenCV's 180 units per turn
//   channel order: a random permutation of the channels
// all saturating to [0, 255]. A first U(0, 1) draw picks the order: above
// 0.5 brightness, contrast, saturation, hue, channel order; else brightness,
// saturation, hue, contrast, channel order (SSD's two orders). Grey images
// skip saturation and hue, which they do not have.
#pragma once

#include <opencv2/core.hpp>

#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

void distort_photometrically(const DistortionParameter& param, RandomStream& random,
                             cv::Mat* image);

}  // namespace xtrain

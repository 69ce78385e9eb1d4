// Darknet's (YOLOv2/v3) geometric augmentation of an annotated image
// (transform_param.jitter_param), in place of resize_param: the image's
// aspect ratio changes at random, it is scaled and put at a random place on
// an output-sized canvas. For a w x h image and a W x H output
// (JitterParameter's width x height), the draws, in this order:
//
//   aspect  a  = (w + U(-jitter w, jitter w)) / (h + U(-jitter h, jitter h))
//   scale   s ~ U(min_scale, max_scale)
//   size    a < 1 (taller): ph = s H, pw = ph a;  else pw = s W, ph = pw / a
//           (each rounded to whole pixels, at least 1)
//   place   x uniform over the integers from 0 to W - pw (either may be the
//           larger: an image wider than the output shows a part of it),
//           then y likewise from 0 to H - ph
//
// The image, resized bilinearly to pw x ph, lands with its top-left corner
// at (x, y) on a W x H canvas of the fill value; what falls outside is cut.
// A box b becomes ((b.xmin pw + x) / W, (b.ymin ph + y) / H, ...): the
// canvas is the frame (-x / pw, -y / ph, (W - x) / pw, (H - y) / ph) of the
// image, and boxes are projected into it as into a crop (box_sampling.hpp):
// clipped to the canvas, dropped when wholly outside or when they fail the
// emit constraint.
//
// Darknet draws the same aspect, scale and offsets (its YOLOv3 fixes s = 1:
// min_scale = max_scale = 1) and fills with 0.5 of its 0..1 pixels; here
// pixels are 8-bit before mean and scale, so the default fill 127.5 becomes
// 128. With probability 1 - prob the image is stretched to W x H instead
// (bilinear, boxes unchanged), as a plain WARP resize.
#pragma once

#include <opencv2/core.hpp>

#include "data/annotated_image.hpp"

namespace xtrain {

// Where the resized image lands on the canvas, in whole pixels; x and y may
// be negative.
struct JitterPlacement {
  int x = 0;
  int y = 0;
  int width = 1;
  int height = 1;
};

// The aspect, scale and place draws above for a w x h image.
JitterPlacement draw_jitter_placement(const JitterParameter& param, int image_width,
                                      int image_height, RandomStream& random);

// The image at `placement` on a width x height canvas of `fill`; boxes
// re-projected (emit: transform_param's emit_constraint, or null).
void place_annotated(const JitterPlacement& placement, int width, int height,
                     const cv::Scalar& fill, const EmitConstraint* emit, AnnotatedImage* image);

// The whole step: one U(0, 1) draw against param.prob, then either the
// placement drawn and applied, or a stretch to the output's size.
void jitter_annotated(const JitterParameter& param, const cv::Scalar& fill,
                      const EmitConstraint* emit, RandomStream& random, AnnotatedImage* image);

}  // namespace xtrain

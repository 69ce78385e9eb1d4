// An image with its objects' boxes, and the geometric steps of SSD's
// augmentation that move both together. Boxes are normalized (fractions of
// the image), so steps that only scale the image leave them as they are.
//
//   expand:  the image at a random place (w_off, h_off) of a canvas
//            ratio times its size, ratio ~ U(1, max_expand_ratio), filled
//            with `fill`; a box b becomes project(canvas frame, b) with the
//            frame (-w_off / w, -h_off / h, (W - w_off) / w, (H - h_off) / h)
//            in the image's own coordinates (W x H the canvas, w x h the image)
//   crop:    the pixels of a normalized crop (rounded down to whole pixels:
//            x0 = floor(xmin * w), x1 = floor(xmax * w), at least one pixel);
//            boxes projected into the rectangle actually cut, after
//            transform_param's emit_constraint when one is given
//   mirror:  left-right: xmin' = 1 - xmax, xmax' = 1 - xmin
//   resize:  to height x width; WARP stretches (boxes unchanged);
//            FIT_LARGE_SIZE_AND_PAD scales by s = min(width / w, height / h)
//            to (round(w s), round(h s)), centres that on the output and
//            pads the rest: x' = (x * round(w s) + left) / width, likewise y
#pragma once

#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "data/box_sampling.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

struct AnnotatedImage {
  cv::Mat pixels;  // 8-bit, 1 or 3 interleaved channels (B, G, R)
  std::vector<BoxAnnotation> objects;
};

// The Datum's image, decoded as `mode` says when encoded (unencoded ones
// keep their channels), and the boxes of every group in order. Throws
// xtrain::Error, without naming the record, for an image that does not
// decode, float_data, or a box with xmin > xmax or ymin > ymax.
AnnotatedImage read_annotated_datum(const AnnotatedDatum& record, ColorMode mode);

// With probability param.prob; `fill` has one value per channel.
void expand_annotated(const ExpansionParameter& param, const std::vector<float>& fill,
                      RandomStream& random, AnnotatedImage* image);

void crop_annotated(const NormalizedBox& crop, const EmitConstraint* emit, AnnotatedImage* image);

void mirror_annotated(AnnotatedImage* image);

// param.resize_mode must be WARP or FIT_LARGE_SIZE_AND_PAD; one of
// interp_mode (LINEAR when none) is drawn when there are several.
void resize_annotated(const ResizeParameter& param, RandomStream& random, AnnotatedImage* image);

}  // namespace xtrain

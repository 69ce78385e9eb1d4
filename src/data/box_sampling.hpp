// The geometry of SSD's data augmentation on normalized boxes: random crops
// drawn by batch samplers and kept when they meet a sample constraint, and
// the ground-truth boxes re-expressed in a crop (or an expanded canvas).
//
// A crop drawn by Sampler s:
//   scale  ~ U(s.min_scale, s.max_scale)
//   aspect ~ U(s.min_aspect_ratio, s.max_aspect_ratio), clamped to
//            [scale^2, 1 / scale^2] so that the crop fits in the image
//   width  = scale * sqrt(aspect),  height = scale / sqrt(aspect)
//   xmin   ~ U(0, 1 - width),       ymin   ~ U(0, 1 - height)
// A crop meets a SampleConstraint when some object meets every bound given:
//   min/max_jaccard_overlap  on IoU(crop, object)
//   min/max_sample_coverage  on area(crop ∩ object) / area(crop)
//   min/max_object_coverage  on area(crop ∩ object) / area(object)
// (no bound given: every crop meets it). Each BatchSampler with
// use_original_image draws up to max_trials crops and keeps those that meet
// its constraint, at most max_sample of them (0: no limit).
//
// A box b seen from a frame f (a crop, or the canvas of an expansion, in the
// same coordinates as b):
//   projected(b) = ((b.xmin - f.xmin) / f.width, (b.ymin - f.ymin) / f.height, ...),
//   clipped to [0, 1]; a box that does not overlap f, or whose clipped
// projection has no area, leaves the image.
#pragma once

#include <google/protobuf/repeated_field.h>

#include <vector>

#include "layers/normalized_box.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

using detection::NormalizedBox;

// One object of an image as the AnnotatedData layer carries it.
struct BoxAnnotation {
  int label = 0;        // the AnnotationGroup's group_label
  int instance_id = 0;  // its index among the image's objects of that label
  NormalizedBox box;
  bool difficult = false;
};

// One draw from U(low, high) (low when high <= low).
float uniform_draw(RandomStream& random, float low, float high);

NormalizedBox sample_crop(const Sampler& sampler, RandomStream& random);

bool meets_sample_constraint(const NormalizedBox& crop, const std::vector<BoxAnnotation>& objects,
                             const SampleConstraint& constraint);

// The crops every batch sampler keeps, sampler after sampler.
void sample_crops(const google::protobuf::RepeatedPtrField<BatchSampler>& samplers,
                  const std::vector<BoxAnnotation>& objects, RandomStream& random,
                  std::vector<NormalizedBox>* crops);

// Whether `box` stays in the image after cropping to `crop`: CENTER, when
// its centre is inside the crop; MIN_OVERLAP, when more than emit_overlap
// of its area is.
bool meets_emit_constraint(const NormalizedBox& crop, const NormalizedBox& box,
                           const EmitConstraint& emit);

// `box` in the coordinates of `frame`; false when it leaves the image.
bool project_box(const NormalizedBox& frame, const NormalizedBox& box, NormalizedBox* projected);

// The objects as seen from `frame`, in order; those that leave the image,
// or fail `emit` when one is given, are dropped.
std::vector<BoxAnnotation> project_annotations(const std::vector<BoxAnnotation>& objects,
                                               const NormalizedBox& frame,
                                               const EmitConstraint* emit);

}  // namespace xtrain

#include "data/box_sampling.hpp"

#include <algorithm>
#include <cmath>

namespace xtrain {

using detection::box_area;
using detection::box_intersection;
using detection::clipped;
using detection::jaccard_overlap;

float uniform_draw(RandomStream& random, float low, float high) {
  if (!(high > low)) return low;
  float value = low;
  random.uniform(1, low, high, &value);
  return value;
}

NormalizedBox sample_crop(const Sampler& sampler, RandomStream& random) {
  const float scale = uniform_draw(random, sampler.min_scale(), sampler.max_scale());
  float aspect = uniform_draw(random, sampler.min_aspect_ratio(), sampler.max_aspect_ratio());
  aspect = std::clamp(aspect, scale * scale, 1.0f / (scale * scale));
  const float width = scale * std::sqrt(aspect);
  const float height = scale / std::sqrt(aspect);
  const float xmin = uniform_draw(random, 0.0f, 1.0f - width);
  const float ymin = uniform_draw(random, 0.0f, 1.0f - height);
  return NormalizedBox{xmin, ymin, xmin + width, ymin + height};
}

namespace {

// Whether `value` is within the bounds the constraint gives (an unset bound
// does not apply).
bool within(bool has_min, float min, bool has_max, float max, float value) {
  return !(has_min && value < min) && !(has_max && value > max);
}

}  // namespace

bool meets_sample_constraint(const NormalizedBox& crop, const std::vector<BoxAnnotation>& objects,
                             const SampleConstraint& c) {
  const bool jaccard = c.has_min_jaccard_overlap() || c.has_max_jaccard_overlap();
  const bool sample = c.has_min_sample_coverage() || c.has_max_sample_coverage();
  const bool object = c.has_min_object_coverage() || c.has_max_object_coverage();
  if (!jaccard && !sample && !object) return true;
  const float crop_area = box_area(crop);
  for (const BoxAnnotation& annotation : objects) {
    const NormalizedBox& box = annotation.box;
    const float inter = box_area(box_intersection(crop, box));
    if (jaccard &&
        !within(c.has_min_jaccard_overlap(), c.min_jaccard_overlap(), c.has_max_jaccard_overlap(),
                c.max_jaccard_overlap(), jaccard_overlap(crop, box))) {
      continue;
    }
    if (sample &&
        !within(c.has_min_sample_coverage(), c.min_sample_coverage(), c.has_max_sample_coverage(),
                c.max_sample_coverage(), crop_area > 0 ? inter / crop_area : 0.0f)) {
      continue;
    }
    const float object_area = box_area(box);
    if (object &&
        !within(c.has_min_object_coverage(), c.min_object_coverage(), c.has_max_object_coverage(),
                c.max_object_coverage(), object_area > 0 ? inter / object_area : 0.0f)) {
      continue;
    }
    return true;
  }
  return false;
}

void sample_crops(const google::protobuf::RepeatedPtrField<BatchSampler>& samplers,
                  const std::vector<BoxAnnotation>& objects, RandomStream& random,
                  std::vector<NormalizedBox>* crops) {
  crops->clear();
  for (const BatchSampler& batch_sampler : samplers) {
    if (!batch_sampler.use_original_image()) continue;
    unsigned found = 0;
    for (unsigned trial = 0; trial < batch_sampler.max_trials(); ++trial) {
      if (batch_sampler.max_sample() > 0 && found >= batch_sampler.max_sample()) break;
      const NormalizedBox crop = sample_crop(batch_sampler.sampler(), random);
      if (meets_sample_constraint(crop, objects, batch_sampler.sample_constraint())) {
        crops->push_back(crop);
        ++found;
      }
    }
  }
}

bool meets_emit_constraint(const NormalizedBox& crop, const NormalizedBox& box,
                           const EmitConstraint& emit) {
  if (emit.emit_type() == EmitConstraint::CENTER) {
    const float x = (box.xmin + box.xmax) / 2;
    const float y = (box.ymin + box.ymax) / 2;
    return x >= crop.xmin && x <= crop.xmax && y >= crop.ymin && y <= crop.ymax;
  }
  const float area = box_area(box);
  return area > 0 && box_area(box_intersection(crop, box)) / area > emit.emit_overlap();
}

bool project_box(const NormalizedBox& frame, const NormalizedBox& box, NormalizedBox* projected) {
  if (box.xmin >= frame.xmax || box.xmax <= frame.xmin || box.ymin >= frame.ymax ||
      box.ymax <= frame.ymin) {
    return false;
  }
  const float width = frame.xmax - frame.xmin;
  const float height = frame.ymax - frame.ymin;
  *projected =
      clipped(NormalizedBox{(box.xmin - frame.xmin) / width, (box.ymin - frame.ymin) / height,
                            (box.xmax - frame.xmin) / width, (box.ymax - frame.ymin) / height});
  return box_area(*projected) > 0;
}

std::vector<BoxAnnotation> project_annotations(const std::vector<BoxAnnotation>& objects,
                                               const NormalizedBox& frame,
                                               const EmitConstraint* emit) {
  std::vector<BoxAnnotation> kept;
  kept.reserve(objects.size());
  for (const BoxAnnotation& object : objects) {
    if (emit != nullptr && !meets_emit_constraint(frame, object.box, *emit)) continue;
    BoxAnnotation moved = object;
    if (project_box(frame, object.box, &moved.box)) kept.push_back(moved);
  }
  return kept;
}

}  // namespace xtrain

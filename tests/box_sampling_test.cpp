// SSD's batch samplers and box projection (src/data/box_sampling.hpp): the
// constraints hold on many random draws, and projections by hand.
#include "data/box_sampling.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "box_expectations.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using detection::box_area;
using detection::box_intersection;
using detection::jaccard_overlap;
using testing::expect_near_box;

BatchSampler batch_sampler(const std::string& text) {
  BatchSampler sampler;
  read_proto_from_text_string(text, &sampler);
  return sampler;
}

std::vector<BoxAnnotation> two_objects() {
  return {BoxAnnotation{1, 0, NormalizedBox{0.1f, 0.1f, 0.4f, 0.5f}, false},
          BoxAnnotation{2, 0, NormalizedBox{0.55f, 0.3f, 0.95f, 0.9f}, true}};
}

TEST(BoxSampling, CropsStayInTheImageWithTheirScaleAndAspect) {
  const BatchSampler s = batch_sampler(
      "sampler { min_scale: 0.3 max_scale: 0.9 min_aspect_ratio: 0.5 max_aspect_ratio: 2 }");
  RandomStream random(7);
  for (int draw = 0; draw < 2000; ++draw) {
    const NormalizedBox crop = sample_crop(s.sampler(), random);
    ASSERT_GE(crop.xmin, 0.0f);
    ASSERT_GE(crop.ymin, 0.0f);
    ASSERT_LE(crop.xmax, 1.0f + 1e-6f);
    ASSERT_LE(crop.ymax, 1.0f + 1e-6f);
    const float width = crop.xmax - crop.xmin;
    const float height = crop.ymax - crop.ymin;
    // scale = sqrt(width * height), aspect = width / height.
    const float scale = std::sqrt(width * height);
    ASSERT_GE(scale, 0.3f - 1e-5f);
    ASSERT_LE(scale, 0.9f + 1e-5f);
    ASSERT_GE(width / height, 0.5f - 1e-4f);
    ASSERT_LE(width / height, 2.0f + 1e-4f);
  }
}

TEST(BoxSampling, KeptCropsMeetTheConstraintOnManyDraws) {
  const std::vector<BoxAnnotation> objects = two_objects();
  const std::vector<std::string> constraints = {
      "min_jaccard_overlap: 0.5", "max_jaccard_overlap: 0.2", "min_sample_coverage: 0.6",
      "min_object_coverage: 0.9 max_sample_coverage: 0.8"};
  for (const std::string& constraint : constraints) {
    google::protobuf::RepeatedPtrField<BatchSampler> samplers;
    *samplers.Add() = batch_sampler(
        "sampler { min_scale: 0.3 max_scale: 1 min_aspect_ratio: 0.5 max_aspect_ratio: 2 } "
        "max_trials: 50 sample_constraint { " +
        constraint + " }");
    RandomStream random(11);
    int kept = 0;
    for (int image = 0; image < 300; ++image) {
      std::vector<NormalizedBox> crops;
      sample_crops(samplers, objects, random, &crops);
      for (const NormalizedBox& crop : crops) {
        ++kept;
        bool some_object_meets_it = false;
        for (const BoxAnnotation& object : objects) {
          const float inter = box_area(box_intersection(crop, object.box));
          const float iou = jaccard_overlap(crop, object.box);
          const float sample_coverage = inter / box_area(crop);
          const float object_coverage = inter / box_area(object.box);
          const SampleConstraint& c = samplers.Get(0).sample_constraint();
          some_object_meets_it |=
              (!c.has_min_jaccard_overlap() || iou >= c.min_jaccard_overlap()) &&
              (!c.has_max_jaccard_overlap() || iou <= c.max_jaccard_overlap()) &&
              (!c.has_min_sample_coverage() || sample_coverage >= c.min_sample_coverage()) &&
              (!c.has_max_sample_coverage() || sample_coverage <= c.max_sample_coverage()) &&
              (!c.has_min_object_coverage() || object_coverage >= c.min_object_coverage());
        }
        ASSERT_TRUE(some_object_meets_it) << constraint;
      }
    }
    EXPECT_GT(kept, 20) << constraint << ": too few crops kept to test anything";
  }
}

TEST(BoxSampling, MaxSampleAndUseOriginalImageLimitTheCrops) {
  google::protobuf::RepeatedPtrField<BatchSampler> samplers;
  *samplers.Add() = batch_sampler("sampler { min_scale: 0.5 } max_sample: 3 max_trials: 50");
  *samplers.Add() = batch_sampler("max_sample: 1");  // the whole image, once
  *samplers.Add() = batch_sampler("use_original_image: false");
  RandomStream random(3);
  std::vector<NormalizedBox> crops;
  sample_crops(samplers, two_objects(), random, &crops);
  ASSERT_EQ(crops.size(), 4u);
  expect_near_box(crops[3], NormalizedBox{0, 0, 1, 1});
}

TEST(BoxSampling, ProjectionIntoAFrameByHand) {
  const NormalizedBox frame{0.2f, 0.2f, 0.6f, 0.6f};
  NormalizedBox projected;
  // ((0.3 - 0.2) / 0.4, (0.4 - 0.2) / 0.4, (0.5 - 0.2) / 0.4, (0.8 - 0.2) / 0.4 -> clipped 1)
  ASSERT_TRUE(project_box(frame, NormalizedBox{0.3f, 0.4f, 0.5f, 0.8f}, &projected));
  expect_near_box(projected, NormalizedBox{0.25f, 0.5f, 0.75f, 1.0f});
  EXPECT_FALSE(project_box(frame, NormalizedBox{0.6f, 0.1f, 0.9f, 0.3f}, &projected));
  // A frame larger than the image (an expansion's canvas) shrinks the box.
  ASSERT_TRUE(
      project_box(NormalizedBox{-1.0f, 0.0f, 1.0f, 2.0f}, NormalizedBox{0, 0, 1, 1}, &projected));
  expect_near_box(projected, NormalizedBox{0.5f, 0.0f, 1.0f, 0.5f});
}

TEST(BoxSampling, EmitConstraintsByHand) {
  const NormalizedBox crop{0.0f, 0.0f, 0.5f, 1.0f};
  const NormalizedBox centre_in{0.2f, 0.2f, 0.7f, 0.4f};   // centre x 0.45, 40% outside
  const NormalizedBox centre_out{0.3f, 0.2f, 0.9f, 0.4f};  // centre x 0.6, 1/3 inside
  EmitConstraint centre;
  EXPECT_TRUE(meets_emit_constraint(crop, centre_in, centre));
  EXPECT_FALSE(meets_emit_constraint(crop, centre_out, centre));
  EmitConstraint overlap;
  overlap.set_emit_type(EmitConstraint::MIN_OVERLAP);
  overlap.set_emit_overlap(0.5f);
  EXPECT_TRUE(meets_emit_constraint(crop, centre_in, overlap));    // 0.6 of it inside
  EXPECT_FALSE(meets_emit_constraint(crop, centre_out, overlap));  // 1/3

  const std::vector<BoxAnnotation> objects = {BoxAnnotation{4, 2, centre_in, true},
                                              BoxAnnotation{5, 0, centre_out, false}};
  const std::vector<BoxAnnotation> kept = project_annotations(objects, crop, &centre);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].label, 4);
  EXPECT_EQ(kept[0].instance_id, 2);
  EXPECT_TRUE(kept[0].difficult);
  expect_near_box(kept[0].box, NormalizedBox{0.4f, 0.2f, 1.0f, 0.4f});
  // Without a constraint every overlapping box stays, clipped.
  EXPECT_EQ(project_annotations(objects, crop, nullptr).size(), 2u);
}

}  // namespace
}  // namespace xtrain

// Darknet-style jitter of an annotated image (src/data/jitter_placement.hpp):
// placements applied to small images with pixels and boxes worked out by
// hand, the draws against Darknet's formula, and prob 0 as a plain stretch.
#include "data/jitter_placement.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>
#include <set>
#include <string>

#include "box_expectations.hpp"
#include "proto_text.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::expect_near_box;
JitterParameter jitter_param(const std::string& text) {
  return testing::parse<JitterParameter>(text);
}

// A 1-channel h x w image whose pixel (x, y) is x + 10 y.
AnnotatedImage numbered_image(int h, int w) {
  AnnotatedImage image;
  image.pixels = cv::Mat(h, w, CV_8UC1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x)
      image.pixels.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(x + 10 * y);
  }
  return image;
}

void add_box(AnnotatedImage* image, int label, NormalizedBox box) {
  image->objects.push_back(BoxAnnotation{label, 0, box, false});
}

TEST(JitterPlacement, AnUnscaledPlacementCopiesThePixelsToTheirOffset) {
  AnnotatedImage image = numbered_image(3, 4);
  add_box(&image, 1, NormalizedBox{0.25f, 1.0f / 3, 0.75f, 1.0f});
  place_annotated(JitterPlacement{2, 1, 4, 3}, 8, 5, cv::Scalar(200), nullptr, &image);
  ASSERT_EQ(image.pixels.cols, 8);
  ASSERT_EQ(image.pixels.rows, 5);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 8; ++x) {
      const bool inside = x >= 2 && x < 6 && y >= 1 && y < 4;
      EXPECT_EQ(image.pixels.at<std::uint8_t>(y, x), inside ? (x - 2) + 10 * (y - 1) : 200)
          << x << ", " << y;
    }
  }
  // Image pixels x 1..3, y 1..3 land on canvas x 3..5, y 2..4.
  ASSERT_EQ(image.objects.size(), 1u);
  expect_near_box(image.objects[0].box, NormalizedBox{3.0f / 8, 2.0f / 5, 5.0f / 8, 4.0f / 5});
}

TEST(JitterPlacement, AScaledPlacementMovesBoxesWithTheImage) {
  AnnotatedImage image;
  image.pixels = cv::Mat(2, 4, CV_8UC1, cv::Scalar(50));
  add_box(&image, 1, NormalizedBox{0.25f, 0.5f, 0.5f, 1.0f});
  // Twice the size (8 x 4) at (1, 2) on a 10 x 7 canvas.
  place_annotated(JitterPlacement{1, 2, 8, 4}, 10, 7, cv::Scalar(0), nullptr, &image);
  EXPECT_EQ(cv::countNonZero(image.pixels), 32);
  EXPECT_EQ(cv::countNonZero(image.pixels(cv::Rect(1, 2, 8, 4)) == 50), 32);
  // x' = (x * 8 + 1) / 10, y' = (y * 4 + 2) / 7.
  ASSERT_EQ(image.objects.size(), 1u);
  expect_near_box(image.objects[0].box, NormalizedBox{0.3f, 4.0f / 7, 0.5f, 6.0f / 7});
}

TEST(JitterPlacement, WhatFallsOutsideIsCutAndItsBoxesDropped) {
  // A 4 x 3 image at x = -2 on a 3 x 3 canvas: image columns 2 and 3 show.
  const auto placed = [](const EmitConstraint* emit) {
    AnnotatedImage image = numbered_image(3, 4);
    add_box(&image, 1, NormalizedBox{0.0f, 0.0f, 0.5f, 1.0f});     // columns 0..2: outside
    add_box(&image, 2, NormalizedBox{0.25f, 0.0f, 0.625f, 1.0f});  // centre 1.75: outside
    add_box(&image, 3, NormalizedBox{0.5f, 0.0f, 1.0f, 0.5f});     // columns 2..4
    place_annotated(JitterPlacement{-2, 0, 4, 3}, 3, 3, cv::Scalar(200), emit, &image);
    return image;
  };
  const AnnotatedImage all = placed(nullptr);
  for (int y = 0; y < 3; ++y) {
    EXPECT_EQ(all.pixels.at<std::uint8_t>(y, 0), 2 + 10 * y);
    EXPECT_EQ(all.pixels.at<std::uint8_t>(y, 1), 3 + 10 * y);
    EXPECT_EQ(all.pixels.at<std::uint8_t>(y, 2), 200);
  }
  // Without an emit constraint every box that overlaps the canvas stays, clipped.
  ASSERT_EQ(all.objects.size(), 2u);
  EXPECT_EQ(all.objects[0].label, 2);
  expect_near_box(all.objects[0].box, NormalizedBox{0.0f, 0.0f, 0.5f / 3, 1.0f});
  EXPECT_EQ(all.objects[1].label, 3);
  expect_near_box(all.objects[1].box, NormalizedBox{0.0f, 0.0f, 2.0f / 3, 0.5f});

  EmitConstraint centre;
  centre.set_emit_type(EmitConstraint::CENTER);
  const AnnotatedImage centred = placed(&centre);
  ASSERT_EQ(centred.objects.size(), 1u);
  EXPECT_EQ(centred.objects[0].label, 3);
}

TEST(JitterPlacement, WithoutJitterAWideImageSpansTheOutputsWidth) {
  // jitter 0, scale 1: a 20 x 10 image keeps its aspect 2, is 10 x 5 on a
  // 10 x 10 output, x = 0 and y anywhere in 0..5; a 10 x 20 one is 5 x 10.
  const JitterParameter fixed =
      jitter_param("jitter: 0 min_scale: 1 max_scale: 1 height: 10 width: 10");
  std::set<int> rows;
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    RandomStream random(seed);
    const JitterPlacement wide = draw_jitter_placement(fixed, 20, 10, random);
    EXPECT_EQ(wide.width, 10);
    EXPECT_EQ(wide.height, 5);
    EXPECT_EQ(wide.x, 0);
    ASSERT_GE(wide.y, 0);
    ASSERT_LE(wide.y, 5);
    rows.insert(wide.y);
    const JitterPlacement tall = draw_jitter_placement(fixed, 10, 20, random);
    EXPECT_EQ(tall.width, 5);
    EXPECT_EQ(tall.height, 10);
    EXPECT_EQ(tall.y, 0);
  }
  EXPECT_EQ(rows.size(), 6u);

  // Twice the output: 20 x 10 at x in -10..0.
  RandomStream random(3);
  const JitterPlacement twice = draw_jitter_placement(
      jitter_param("jitter: 0 min_scale: 2 max_scale: 2 height: 10 width: 10"), 20, 10, random);
  EXPECT_EQ(twice.width, 20);
  EXPECT_EQ(twice.height, 10);
  EXPECT_GE(twice.x, -10);
  EXPECT_LE(twice.x, 0);
  EXPECT_EQ(twice.y, 0);
}

TEST(JitterPlacement, DrawsFollowDarknetsFormula) {
  const JitterParameter param =
      jitter_param("jitter: 0.3 min_scale: 0.5 max_scale: 1.5 height: 100 width: 120");
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    RandomStream random(seed);
    RandomStream replay = random;
    const JitterPlacement got = draw_jitter_placement(param, 60, 40, random);
    // The same draws by hand: each side by up to 30 %, then the scale.
    float dw = 0;
    float dh = 0;
    float scale = 0;
    replay.uniform(1, -0.3f * 60, 0.3f * 60, &dw);
    replay.uniform(1, -0.3f * 40, 0.3f * 40, &dh);
    replay.uniform(1, 0.5f, 1.5f, &scale);
    const double aspect = static_cast<double>(60 + dw) / (40 + dh);
    const double width = aspect < 1 ? 100.0 * scale * aspect : 120.0 * scale;
    const double height = aspect < 1 ? 100.0 * scale : 120.0 * scale / aspect;
    EXPECT_EQ(got.width, std::lround(width)) << seed;
    EXPECT_EQ(got.height, std::lround(height)) << seed;
    EXPECT_GE(got.x, std::min(0, 120 - got.width));
    EXPECT_LE(got.x, std::max(0, 120 - got.width));
    EXPECT_GE(got.y, std::min(0, 100 - got.height));
    EXPECT_LE(got.y, std::max(0, 100 - got.height));
  }
}

TEST(JitterPlacement, TheStepIsOneProbabilityDrawThenThePlacement) {
  const JitterParameter param = jitter_param("height: 12 width: 16");
  AnnotatedImage image = numbered_image(6, 8);
  add_box(&image, 1, NormalizedBox{0.25f, 0.25f, 0.75f, 0.75f});
  AnnotatedImage expected = image;
  expected.pixels = image.pixels.clone();
  RandomStream random(11);
  RandomStream replay = random;
  jitter_annotated(param, cv::Scalar(128), nullptr, random, &image);

  float draw = 0;
  replay.uniform(1, 0.0f, 1.0f, &draw);
  const JitterPlacement placement = draw_jitter_placement(param, 8, 6, replay);
  place_annotated(placement, 16, 12, cv::Scalar(128), nullptr, &expected);
  EXPECT_EQ(cv::norm(image.pixels, expected.pixels, cv::NORM_INF), 0.0);
  ASSERT_EQ(image.objects.size(), expected.objects.size());
  for (std::size_t i = 0; i < image.objects.size(); ++i) {
    expect_near_box(image.objects[i].box, expected.objects[i].box);
  }
}

TEST(JitterPlacement, ProbabilityZeroStretchesToTheOutput) {
  AnnotatedImage image = numbered_image(6, 8);
  add_box(&image, 1, NormalizedBox{0.1f, 0.2f, 0.3f, 0.4f});
  cv::Mat stretched;
  cv::resize(image.pixels, stretched, cv::Size(5, 9), 0, 0, cv::INTER_LINEAR);
  RandomStream random(4);
  jitter_annotated(jitter_param("prob: 0 height: 9 width: 5"), cv::Scalar(128), nullptr, random,
                   &image);
  ASSERT_EQ(image.pixels.rows, 9);
  ASSERT_EQ(image.pixels.cols, 5);
  EXPECT_EQ(cv::norm(image.pixels, stretched, cv::NORM_INF), 0.0);
  ASSERT_EQ(image.objects.size(), 1u);
  expect_near_box(image.objects[0].box, NormalizedBox{0.1f, 0.2f, 0.3f, 0.4f});
}

}  // namespace
}  // namespace xtrain

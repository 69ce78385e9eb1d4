// Box geometry by hand: areas in both coordinate conventions, intersections of
// boxes that meet, touch and stay apart, IoU, and clipping.
#include <gtest/gtest.h>

#include "layers/normalized_box.hpp"

namespace xtrain::detection {
namespace {

TEST(NormalizedBox, AreaCountsEndPixelsOnlyForPixelBoxes) {
  const NormalizedBox b{0.1f, 0.2f, 0.5f, 0.7f};
  EXPECT_NEAR(box_area(b), 0.4f * 0.5f, 1e-6f);
  const NormalizedBox pixels{10, 20, 19, 24};  // 10 x 5 pixels
  EXPECT_FLOAT_EQ(box_area(pixels, /*normalized=*/false), 50.0f);
  EXPECT_FLOAT_EQ(box_area(NormalizedBox{0.5f, 0.5f, 0.4f, 0.9f}), 0.0f);  // inverted
}

TEST(NormalizedBox, IntersectionOfOverlappingApartAndTouchingBoxes) {
  const NormalizedBox a{0.0f, 0.0f, 0.5f, 0.5f};
  const NormalizedBox inside = box_intersection(a, NormalizedBox{0.25f, 0.1f, 0.75f, 0.3f});
  EXPECT_FLOAT_EQ(inside.xmin, 0.25f);
  EXPECT_FLOAT_EQ(inside.ymin, 0.1f);
  EXPECT_FLOAT_EQ(inside.xmax, 0.5f);
  EXPECT_FLOAT_EQ(inside.ymax, 0.3f);
  EXPECT_TRUE(is_inverted(box_intersection(a, NormalizedBox{0.6f, 0.6f, 0.9f, 0.9f})));
  // Boxes sharing an edge meet in a line: area 0, overlap 0.
  const NormalizedBox edge = box_intersection(a, NormalizedBox{0.5f, 0.0f, 1.0f, 0.5f});
  EXPECT_FALSE(is_inverted(edge));
  EXPECT_FLOAT_EQ(box_area(edge), 0.0f);
  EXPECT_FLOAT_EQ(jaccard_overlap(a, NormalizedBox{0.5f, 0.0f, 1.0f, 0.5f}), 0.0f);
}

TEST(NormalizedBox, JaccardOverlapByHand) {
  const NormalizedBox a{0.0f, 0.0f, 0.4f, 0.4f};
  const NormalizedBox b{0.2f, 0.2f, 0.6f, 0.6f};
  // Intersection 0.2 x 0.2 = 0.04; union 0.16 + 0.16 - 0.04 = 0.28.
  EXPECT_NEAR(jaccard_overlap(a, b), 0.04f / 0.28f, 1e-6f);
  EXPECT_FLOAT_EQ(jaccard_overlap(a, a), 1.0f);
  // Pixel boxes: a = 5x5 at 0..4, b = 5x5 at 3..7: 2x2 shared, union 46.
  EXPECT_NEAR(jaccard_overlap(NormalizedBox{0, 0, 4, 4}, NormalizedBox{3, 3, 7, 7}, false),
              4.0f / 46.0f, 1e-6f);
}

TEST(NormalizedBox, ClippingClampsEachCoordinateToTheImage) {
  const NormalizedBox c = clipped(NormalizedBox{-0.2f, 0.3f, 1.4f, 0.9f});
  EXPECT_FLOAT_EQ(c.xmin, 0.0f);
  EXPECT_FLOAT_EQ(c.ymin, 0.3f);
  EXPECT_FLOAT_EQ(c.xmax, 1.0f);
  EXPECT_FLOAT_EQ(c.ymax, 0.9f);
}

}  // namespace
}  // namespace xtrain::detection

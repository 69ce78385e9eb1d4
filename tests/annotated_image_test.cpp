// The geometric and photometric steps of SSD's augmentation on one image and
// its boxes (src/data/annotated_image.hpp, photometric_distortion.hpp):
// pixels and boxes worked out by hand.
#include "data/annotated_image.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "box_expectations.hpp"
#include "data/photometric_distortion.hpp"
#include "error_message.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::expect_near_box;
template <typename Message>
Message from_text(const std::string& text) {
  Message message;
  read_proto_from_text_string(text, &message);
  return message;
}

// A 1-channel h x w image whose pixel (x, y) is x + 10 y, one box.
AnnotatedImage numbered_image(int h, int w, NormalizedBox box) {
  AnnotatedImage image;
  image.pixels = cv::Mat(h, w, CV_8UC1);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x)
      image.pixels.at<std::uint8_t>(y, x) = static_cast<std::uint8_t>(x + 10 * y);
  }
  image.objects.push_back(BoxAnnotation{3, 1, box, false});
  return image;
}

TEST(AnnotatedImage, CropCutsWholePixelsAndReprojectsBoxes) {
  AnnotatedImage image = numbered_image(10, 20, NormalizedBox{0.3f, 0.3f, 0.5f, 0.5f});
  image.objects.push_back(BoxAnnotation{4, 0, NormalizedBox{0.9f, 0.0f, 1.0f, 0.1f}, false});
  // x: [0.25 * 20, 0.75 * 20) = [5, 15); y: [0.2 * 10, 0.7 * 10) = [2, 7).
  crop_annotated(NormalizedBox{0.25f, 0.2f, 0.75f, 0.7f}, nullptr, &image);
  ASSERT_EQ(image.pixels.cols, 10);
  ASSERT_EQ(image.pixels.rows, 5);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(0, 0), 5 + 10 * 2);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(4, 9), 14 + 10 * 6);
  // The box in the crop's frame; the second box is outside and dropped.
  ASSERT_EQ(image.objects.size(), 1u);
  expect_near_box(image.objects[0].box, NormalizedBox{0.1f, 0.2f, 0.5f, 0.6f});
  EXPECT_EQ(image.objects[0].label, 3);
  EXPECT_EQ(image.objects[0].instance_id, 1);
}

TEST(AnnotatedImage, ExpansionPlacesTheImageOnAFilledCanvas) {
  const ExpansionParameter expand = from_text<ExpansionParameter>("max_expand_ratio: 3");
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    AnnotatedImage image = numbered_image(6, 8, NormalizedBox{0.25f, 0.5f, 0.75f, 1.0f});
    RandomStream random(seed);
    expand_annotated(expand, {200.0f}, random, &image);
    const int width = image.pixels.cols;
    const int height = image.pixels.rows;
    ASSERT_GE(width, 8);
    ASSERT_LE(width, 24);
    // Pixel (0, 0) of the image, value 0, is the only 0 of the canvas.
    cv::Point origin;
    cv::minMaxLoc(image.pixels, nullptr, nullptr, &origin, nullptr);
    ASSERT_EQ(image.pixels.at<std::uint8_t>(origin), 0);
    EXPECT_EQ(image.pixels.at<std::uint8_t>(origin.y + 5, origin.x + 7), 7 + 50);
    if (origin.x > 0) {
      EXPECT_EQ(image.pixels.at<std::uint8_t>(origin.y, origin.x - 1), 200);
    }
    // x' = (x * 8 + x_off) / width, y' = (y * 6 + y_off) / height.
    ASSERT_EQ(image.objects.size(), 1u);
    expect_near_box(image.objects[0].box,
                    NormalizedBox{(2.0f + origin.x) / width, (3.0f + origin.y) / height,
                                  (6.0f + origin.x) / width, (6.0f + origin.y) / height});
  }
}

TEST(AnnotatedImage, MirrorFlipsPixelsAndBoxes) {
  AnnotatedImage image = numbered_image(2, 4, NormalizedBox{0.1f, 0.2f, 0.3f, 0.4f});
  mirror_annotated(&image);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(1, 0), 3 + 10);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(1, 3), 0 + 10);
  expect_near_box(image.objects[0].box, NormalizedBox{0.7f, 0.2f, 0.9f, 0.4f});
}

TEST(AnnotatedImage, FitLargeSizeAndPadCentresTheImageAndMovesBoxes) {
  AnnotatedImage image = numbered_image(10, 20, NormalizedBox{0.5f, 0.5f, 1.0f, 1.0f});
  const ResizeParameter resize = from_text<ResizeParameter>(
      "resize_mode: FIT_LARGE_SIZE_AND_PAD height: 40 width: 40 pad_value: 99 "
      "interp_mode: NEAREST");
  RandomStream random(1);
  resize_annotated(resize, random, &image);
  // Scale min(40 / 20, 40 / 10) = 2: the image is 40 x 20, rows 10..29.
  ASSERT_EQ(image.pixels.rows, 40);
  ASSERT_EQ(image.pixels.cols, 40);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(9, 5), 99);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(30, 5), 99);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(10, 0), 0);
  EXPECT_EQ(image.pixels.at<std::uint8_t>(29, 39), 19 + 90);
  // y' = (y * 20 + 10) / 40, x unchanged.
  expect_near_box(image.objects[0].box, NormalizedBox{0.5f, 0.5f, 1.0f, 0.75f});

  AnnotatedImage warped = numbered_image(10, 20, NormalizedBox{0.5f, 0.5f, 1.0f, 1.0f});
  resize_annotated(from_text<ResizeParameter>("height: 5 width: 7"), random, &warped);
  EXPECT_EQ(warped.pixels.rows, 5);
  EXPECT_EQ(warped.pixels.cols, 7);
  expect_near_box(warped.objects[0].box, NormalizedBox{0.5f, 0.5f, 1.0f, 1.0f});
}

TEST(AnnotatedImage, InvertedBoxInARecordNamesTheInstance) {
  AnnotatedDatum record = from_text<AnnotatedDatum>(
      "type: BBOX annotation_group { group_label: 2 annotation { instance_id: 5 bbox { xmin: 0.6 "
      "ymin: 0.1 xmax: 0.2 ymax: 0.3 } } }");
  Datum& datum = *record.mutable_datum();
  datum.set_channels(1);
  datum.set_height(1);
  datum.set_width(1);
  datum.set_data(std::string(1, '\0'));
  const std::string message =
      testing::error_of([&] { read_annotated_datum(record, ColorMode::kAsStored); });
  EXPECT_NE(message.find("instance 5 of label 2"), std::string::npos) << message;
  EXPECT_NE(message.find("xmin <= xmax"), std::string::npos) << message;
}

TEST(PhotometricDistortion, BrightnessAddsOneDeltaToEveryPixel) {
  const DistortionParameter always =
      from_text<DistortionParameter>("brightness_prob: 1 brightness_delta: 32");
  cv::Mat image(3, 4, CV_8UC3, cv::Scalar(100, 120, 140));
  RandomStream random(5);
  distort_photometrically(always, random, &image);
  const cv::Vec3b first = image.at<cv::Vec3b>(0, 0);
  const int delta = first[0] - 100;
  EXPECT_LE(std::abs(delta), 32);
  EXPECT_NE(delta, 0);
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) {
      EXPECT_EQ(image.at<cv::Vec3b>(y, x), cv::Vec3b(100 + delta, 120 + delta, 140 + delta));
    }
  }
}

TEST(PhotometricDistortion, NoProbabilityChangesNothingAndGreyImagesSkipColour) {
  cv::Mat colour(3, 4, CV_8UC3, cv::Scalar(10, 120, 240));
  const cv::Mat before = colour.clone();
  RandomStream random(5);
  distort_photometrically(DistortionParameter(), random, &colour);
  EXPECT_EQ(cv::norm(colour, before, cv::NORM_INF), 0.0);

  const DistortionParameter colour_only = from_text<DistortionParameter>(
      "hue_prob: 1 hue_delta: 36 saturation_prob: 1 saturation_lower: 0.5 saturation_upper: 1.5");
  cv::Mat grey(3, 4, CV_8UC1, cv::Scalar(77));
  distort_photometrically(colour_only, random, &grey);
  EXPECT_EQ(cv::countNonZero(grey != 77), 0);
  distort_photometrically(colour_only, random, &colour);
  EXPECT_GT(cv::norm(colour, before, cv::NORM_INF), 0.0);
}

}  // namespace
}  // namespace xtrain

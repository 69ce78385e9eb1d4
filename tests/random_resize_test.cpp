// NVIDIA Caffe 0.17's random resize (data/random_resize.hpp) and the
// DataTransformer with it: the sizes drawn, against the steps written out
// with the same draws; the whole transform against a reference that resizes
// the interleaved image with OpenCV (as NVIDIA Caffe does; resizing the
// planes one by one gives other pixels with INTER_CUBIC), then crops,
// subtracts, scales and mirrors; the TEST phase; allow_upscale; the mean
// file's centre; the settings refused.
#include "data/random_resize.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/data_transformer.hpp"
#include "error_message.hpp"
#include "proto_text.hpp"
#include "tool_runner.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;

const char* kOwner = "layer 'data' (Data)";

TransformationParameter transform_param(const std::string& text) {
  return testing::parse<TransformationParameter>(text);
}

// A uint8 Datum of `channels` x `height` x `width` with varied pixels.
Datum varied_datum(int channels, int height, int width) {
  std::vector<unsigned char> pixels;
  for (int c = 0; c < channels; ++c)
    for (int h = 0; h < height; ++h)
      for (int w = 0; w < width; ++w)
        pixels.push_back(static_cast<unsigned char>((c * 71 + h * 13 + w * 29 + h * w) % 256));
  return make_datum(DatumShape{channels, height, width}, pixels.data(), 0);
}

// NVIDIA Caffe's steps written out: the size, given the same stream.
struct Expected {
  int lower = 0, upper = 0;
  float ratio_lower = 0, ratio_upper = 0;
  float vertical_lower = 1, vertical_upper = 1;
  float horizontal_lower = 1, horizontal_upper = 1;
  int crop = 0;
  bool allow_upscale = false;

  static float uniform(float a, float b, RandomStream& random) {
    if (a == b) return a;
    return static_cast<float>(a + (static_cast<double>(b) - a) *
                                      static_cast<double>(random.engine()()) / UINT_MAX);
  }
  PlaneSize size(int height, int width, RandomStream& random) const {
    int shorter = std::min(height, width);
    if (lower > 0) shorter = lower + static_cast<int>(random.engine()() % (upper - lower + 1));
    const float f = static_cast<float>(shorter) / static_cast<float>(std::min(height, width));
    float h = f * height, w = f * width;
    if (ratio_lower >= 1 && ratio_upper > 1) {
      const float r = uniform(ratio_lower, ratio_upper, random);
      if (w > h) {
        w = h * r;
      } else if (w < h) {
        h = w * r;
      } else if (random.engine()() % 2 != 0) {
        w = h * r;
      } else {
        h = w * r;
      }
    }
    h *= uniform(vertical_lower, vertical_upper, random);
    w *= uniform(horizontal_lower, horizontal_upper, random);
    PlaneSize s{std::max(crop, static_cast<int>(std::lround(h))),
                std::max(crop, static_cast<int>(std::lround(w)))};
    if (!allow_upscale) s = {std::min(s.height, height), std::min(s.width, width)};
    return s;
  }
};

TEST(RandomResize, ShorterSideOfFourByFiveToTwoIsTwoByThree) {
  // NVIDIA Caffe's own test: lround(2.5) = 3.
  const RandomResize resize(
      transform_param("img_rand_resize_lower: 2 img_rand_resize_upper: 2 crop_size: 1"), kOwner);
  RandomStream random(1);
  EXPECT_EQ(resize.draw(4, 5, random), (PlaneSize{2, 3}));
  EXPECT_EQ(resize.draw(5, 4, random), (PlaneSize{3, 2}));
}

TEST(RandomResize, DrawsAsNvidiaCaffesSteps) {
  const std::vector<std::pair<std::string, Expected>> cases = {
      {"img_rand_resize_lower: 20 img_rand_resize_upper: 40", {20, 40}},
      {"img_rand_resize_lower: 20 img_rand_resize_upper: 40 allow_upscale: true",
       {20, 40, 0, 0, 1, 1, 1, 1, 0, true}},
      {"img_rand_resize_lower: 8 img_rand_resize_upper: 48 vertical_stretch_lower: 0.7 "
       "vertical_stretch_upper: 1.3 horizontal_stretch_lower: 0.7 horizontal_stretch_upper: 1.3 "
       "allow_upscale: true",
       {8, 48, 0, 0, 0.7f, 1.3f, 0.7f, 1.3f, 0, true}},
      {"rand_resize_ratio_lower: 1 rand_resize_ratio_upper: 1.5", {0, 0, 1, 1.5f}},
      {"rand_resize_ratio_lower: 1.2 rand_resize_ratio_upper: 1.2 allow_upscale: true",
       {0, 0, 1.2f, 1.2f, 1, 1, 1, 1, 0, true}},
      {"vertical_stretch_lower: 0.5 vertical_stretch_upper: 0.9", {0, 0, 0, 0, 0.5f, 0.9f}}};
  for (const auto& [text, steps] : cases) {
    SCOPED_TRACE(text);
    Expected expected = steps;
    expected.crop = 6;
    const RandomResize resize(transform_param(text + " crop_size: 6"), kOwner);
    ASSERT_TRUE(resize.enabled());
    RandomStream random(99);
    RandomStream replay(99);
    std::set<std::pair<int, int>> sizes;
    for (int repeat = 0; repeat < 200; ++repeat) {
      // Landscape, portrait and square images.
      const int height = repeat % 3 == 0 ? 30 : 24;
      const int width = repeat % 3 == 1 ? 30 : 24;
      const PlaneSize size = resize.draw(height, width, random);
      ASSERT_EQ(size, expected.size(height, width, replay)) << "repeat " << repeat;
      ASSERT_GE(size.height, 6);
      ASSERT_GE(size.width, 6);
      if (!expected.allow_upscale) {
        ASSERT_LE(size.height, height);
        ASSERT_LE(size.width, width);
      }
      sizes.insert({size.height, size.width});
    }
    // The streams stayed in step: the same number of draws.
    EXPECT_EQ(random.engine()(), replay.engine()());
    EXPECT_GT(sizes.size(), 1u);
  }
}

TEST(RandomResize, TheShorterSideLandsInTheRange) {
  const RandomResize resize(transform_param("img_rand_resize_lower: 10 img_rand_resize_upper: 14 "
                                            "crop_size: 8 allow_upscale: true"),
                            kOwner);
  RandomStream random(3);
  std::set<int> shorter;
  for (int repeat = 0; repeat < 300; ++repeat) {
    const PlaneSize size = resize.draw(20, 30, random);
    shorter.insert(size.height);
    // The aspect kept: 20 x 30 -> D x 1.5 D (in float, as NVIDIA Caffe).
    const float factor = static_cast<float>(size.height) / 20.0f;
    ASSERT_EQ(size.width, static_cast<int>(std::lround(factor * 30.0f)));
  }
  EXPECT_EQ(shorter, (std::set<int>{10, 11, 12, 13, 14}));
}

// The default stretches (1, 1) and equal bounds draw nothing.
TEST(RandomResize, EqualBoundsDrawNothing) {
  const RandomResize resize(
      transform_param("img_rand_resize_lower: 12 img_rand_resize_upper: 12 "
                      "vertical_stretch_lower: 1 vertical_stretch_upper: 1 crop_size: 4"),
      kOwner);
  RandomStream random(5);
  RandomStream untouched(5);
  // One draw for the size (r() % 1), none for the stretch.
  EXPECT_EQ(resize.draw(20, 16, random), (PlaneSize{15, 12}));
  untouched.engine()();
  EXPECT_EQ(random.engine()(), untouched.engine()());
}

TEST(RandomResize, InterpolationDownAndUpAsSet) {
  // Downscaling with nearest neighbour takes source pixels only; upscaling
  // with INTER_LINEAR gives values between them.
  const RandomResize resize(
      transform_param("img_rand_resize_lower: 3 img_rand_resize_upper: 3 "
                      "crop_size: 1 interpolation_algo_down: INTER_NEAREST "
                      "interpolation_algo_up: INTER_LINEAR allow_upscale: true"),
      kOwner);
  const std::vector<float> image = {0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110};  // 2 x 6
  std::vector<float> out;
  ResizeBuffers buffers;
  resize.resize(image.data(), 1, {2, 6}, {1, 3}, buffers, &out);
  for (float v : out) EXPECT_TRUE(std::find(image.begin(), image.end(), v) != image.end()) << v;
  resize.resize(image.data(), 1, {2, 6}, {4, 12}, buffers, &out);
  EXPECT_EQ(out.size(), 48u);
  const std::set<float> values(out.begin(), out.end());
  bool between = false;
  for (float v : values) between |= std::find(image.begin(), image.end(), v) == image.end();
  EXPECT_TRUE(between);
}

TEST(RandomResize, BadSettingsAreErrorsNamingTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"img_rand_resize_lower: 300 img_rand_resize_upper: 200 crop_size: 8",
       "img_rand_resize_lower 300 is above its img_rand_resize_upper 200"},
      {"img_rand_resize_lower: 200 crop_size: 8",
       "img_rand_resize_lower 200 and img_rand_resize_upper 0; give both"},
      {"img_rand_resize_upper: 200 crop_size: 8",
       "img_rand_resize_lower 0 and img_rand_resize_upper 200; give both"},
      {"img_rand_resize_lower: 200 img_rand_resize_upper: 300", "give a crop_size"},
      {"vertical_stretch_lower: 0.7 vertical_stretch_upper: 1.3", "give a crop_size"},
      {"vertical_stretch_lower: 0 crop_size: 8",
       "vertical_stretch_lower 0 and vertical_stretch_upper 1 must be above 0"},
      {"horizontal_stretch_lower: -1 horizontal_stretch_upper: 2 crop_size: 8",
       "horizontal_stretch_lower -1 and horizontal_stretch_upper 2 must be above 0"},
      {"horizontal_stretch_lower: 1.3 horizontal_stretch_upper: 0.7 crop_size: 8",
       "horizontal_stretch_lower 1.3 is above its horizontal_stretch_upper 0.7"},
      {"vertical_stretch_upper: nan crop_size: 8", "must be finite numbers"},
      {"rand_resize_ratio_lower: 0.5 rand_resize_ratio_upper: 2 crop_size: 8",
       "rand_resize_ratio_lower 0.5 is below 1"},
      {"rand_resize_ratio_lower: 2 rand_resize_ratio_upper: 1.5 crop_size: 8",
       "rand_resize_ratio_lower 2 is above its rand_resize_ratio_upper 1.5"}};
  for (const auto& [text, said] : cases) {
    const std::string message = error_of([&] { RandomResize(transform_param(text), kOwner); });
    EXPECT_NE(message.find(kOwner), std::string::npos) << text << " gave: " << message;
    EXPECT_NE(message.find(said), std::string::npos) << text << " gave: " << message;
    // The transformer refuses them alike.
    const std::string again =
        error_of([&] { DataTransformer(transform_param(text), TRAIN, kOwner); });
    EXPECT_NE(again.find(said), std::string::npos) << text << " gave: " << again;
  }
  // Interpolation and allow_upscale alone do not resize (NVIDIA Caffe's rule).
  EXPECT_FALSE(
      RandomResize(transform_param("interpolation_algo_up: INTER_AREA allow_upscale: true"), kOwner)
          .enabled());
}

// ---- The transform with the resize ------------------------------------------

struct Crop {
  int h_off = 0;
  int w_off = 0;
  bool mirror = false;
};

// NVIDIA Caffe's order on the interleaved OpenCV image: resize, crop, then
// (x - mean) * scale and the mirror; mean(c, h, w) indexed in the crop.
std::vector<float> reference(const Datum& datum, PlaneSize size, int interpolation, int crop,
                             Crop at, float scale,
                             const std::function<float(int, int, int)>& mean) {
  const DatumShape in = datum_shape(datum);
  std::vector<float> planar(in.count());
  datum_to_floats(datum, planar.data());
  cv::Mat image(in.height, in.width, CV_8UC(in.channels));
  for (int c = 0; c < in.channels; ++c)
    for (int h = 0; h < in.height; ++h)
      for (int w = 0; w < in.width; ++w)
        image.ptr<unsigned char>(h)[w * in.channels + c] =
            static_cast<unsigned char>(planar[(c * in.height + h) * in.width + w]);
  cv::Mat resized = image;
  if (size.height != in.height || size.width != in.width) {
    cv::resize(image, resized, cv::Size(size.width, size.height), 0, 0, interpolation);
  }
  std::vector<float> y(static_cast<std::size_t>(in.channels) * crop * crop);
  for (int c = 0; c < in.channels; ++c)
    for (int h = 0; h < crop; ++h)
      for (int w = 0; w < crop; ++w) {
        const int source_w = at.w_off + (at.mirror ? crop - 1 - w : w);
        const float x = resized.ptr<unsigned char>(at.h_off + h)[source_w * in.channels + c];
        const int mean_w = at.mirror ? crop - 1 - w : w;
        y[(c * crop + h) * crop + w] = (x - mean(c, h, mean_w)) * scale;
      }
  return y;
}

float no_mean(int, int, int) { return 0.0f; }

std::vector<float> run(const DataTransformer& transformer, const Datum& datum,
                       RandomStream& random) {
  transformer.check_input_shape(datum_shape(datum));
  std::vector<float> out(transformer.output_shape(datum_shape(datum)).count());
  transformer.transform(datum, random, out.data());
  return out;
}

// The draws: mirror, the resize's, then the crop's offsets in the resized
// image; each interpolation, down and up.
TEST(RandomResizeTransform, TrainMatchesNvidiaCaffesOrderOnTheInterleavedImage) {
  const std::vector<std::pair<const char*, int>> algorithms = {{"INTER_NEAREST", cv::INTER_NEAREST},
                                                               {"INTER_LINEAR", cv::INTER_LINEAR},
                                                               {"INTER_CUBIC", cv::INTER_CUBIC},
                                                               {"INTER_AREA", cv::INTER_AREA}};
  for (const auto& [name, algorithm] : algorithms) {
    SCOPED_TRACE(name);
    const std::string text =
        std::string("img_rand_resize_lower: 9 img_rand_resize_upper: 30 crop_size: 8 ") +
        "mirror: true scale: 0.5 mean_value: 10 mean_value: 20 mean_value: 30 allow_upscale: true "
        "horizontal_stretch_lower: 0.8 horizontal_stretch_upper: 1.25 interpolation_algo_down: " +
        name + " interpolation_algo_up: " + name;
    const DataTransformer transformer(transform_param(text), TRAIN, kOwner);
    EXPECT_TRUE(transformer.uses_random());
    Expected expected{9, 30, 0, 0, 1, 1, 0.8f, 1.25f, 8, true};
    const Datum datum = varied_datum(3, 17, 23);
    RandomStream random(7);
    RandomStream draws(7);
    std::set<bool> grew;
    for (int repeat = 0; repeat < 40; ++repeat) {
      Crop at;
      at.mirror = draws.engine()() % 2 != 0;
      const PlaneSize size = expected.size(17, 23, draws);
      at.h_off = static_cast<int>(draws.engine()() % (size.height - 8 + 1));
      at.w_off = static_cast<int>(draws.engine()() % (size.width - 8 + 1));
      const auto mean = [](int c, int, int) { return 10.0f * (c + 1); };
      ASSERT_EQ(run(transformer, datum, random),
                reference(datum, size, algorithm, 8, at, 0.5f, mean))
          << "repeat " << repeat << ", size " << size.height << "x" << size.width;
      grew.insert(size.height > 17 || size.width > 23);
    }
    EXPECT_EQ(grew.size(), 2u);  // both interpolations were used
  }
}

// As in NVIDIA Caffe the resize happens in TEST too; the crop is centred.
TEST(RandomResizeTransform, TestPhaseResizesAtRandomAndCropsTheCentre) {
  const DataTransformer transformer(
      transform_param("img_rand_resize_lower: 12 img_rand_resize_upper: 16 crop_size: 10"), TEST,
      kOwner);
  EXPECT_TRUE(transformer.uses_random());
  const Expected expected{12, 16, 0, 0, 1, 1, 1, 1, 10, false};
  const Datum datum = varied_datum(1, 20, 25);
  RandomStream random(8);
  RandomStream draws(8);
  for (int repeat = 0; repeat < 20; ++repeat) {
    const PlaneSize size = expected.size(20, 25, draws);
    const Crop at{(size.height - 10) / 2, (size.width - 10) / 2, false};
    ASSERT_EQ(run(transformer, datum, random),
              reference(datum, size, cv::INTER_NEAREST, 10, at, 1.0f, no_mean));
  }
}

TEST(RandomResizeTransform, ImagesOfAnySizeAtLeastTheCropUnlessUpscaling) {
  const DataTransformer strict(
      transform_param("img_rand_resize_lower: 12 img_rand_resize_upper: 16 crop_size: 10"), TRAIN,
      kOwner);
  const DatumShape first{3, 40, 30};
  strict.check_input_shape(first);
  EXPECT_EQ(strict.output_shape(first), (DatumShape{3, 10, 10}));
  EXPECT_TRUE(strict.batchable_with(first, DatumShape{3, 11, 90}));
  EXPECT_FALSE(strict.batchable_with(first, DatumShape{3, 9, 90}));
  EXPECT_FALSE(strict.batchable_with(first, DatumShape{1, 40, 30}));
  const std::string message = error_of([&] { strict.check_input_shape(DatumShape{3, 8, 30}); });
  EXPECT_NE(message.find("crop_size 10 is larger than the images (3x8x30)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("allow_upscale: true"), std::string::npos) << message;

  // With allow_upscale a small image is enlarged to the crop.
  const DataTransformer upscaling(
      transform_param("img_rand_resize_lower: 12 img_rand_resize_upper: 16 crop_size: 10 "
                      "allow_upscale: true"),
      TRAIN, kOwner);
  upscaling.check_input_shape(DatumShape{1, 4, 6});
  EXPECT_TRUE(upscaling.batchable_with(first, DatumShape{3, 2, 2}));
  RandomStream random(9);
  EXPECT_EQ(run(upscaling, varied_datum(1, 4, 6), random).size(), 100u);
}

// The mean file's central crop_size x crop_size is subtracted, whatever the
// size the image was resized to.
TEST(RandomResizeTransform, MeanFileSubtractsItsCentre) {
  testing::TempDir dir("random_resize");
  const auto mean_at = [](int c, int h, int w) { return 0.5f * c + 0.25f * h - 0.125f * w; };
  BlobProto proto;
  for (int dim : {1, 2, 9, 11}) proto.mutable_shape()->add_dim(dim);
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 9; ++h)
      for (int w = 0; w < 11; ++w) proto.add_data(mean_at(c, h, w));
  write_proto_to_binary_file(proto, dir.file("mean.binaryproto"));
  const DataTransformer transformer(
      transform_param("img_rand_resize_lower: 7 img_rand_resize_upper: 20 crop_size: 5 "
                      "mirror: true mean_file: '" +
                      dir.file("mean.binaryproto") + "'"),
      TRAIN, kOwner);
  const Expected expected{7, 20, 0, 0, 1, 1, 1, 1, 5, false};
  const Datum datum = varied_datum(2, 16, 19);
  // The centre of 9 x 11 for a crop of 5: from (2, 3).
  const auto centre = [&](int c, int h, int w) { return mean_at(c, 2 + h, 3 + w); };
  RandomStream random(10);
  RandomStream draws(10);
  for (int repeat = 0; repeat < 20; ++repeat) {
    Crop at;
    at.mirror = draws.engine()() % 2 != 0;
    const PlaneSize size = expected.size(16, 19, draws);
    at.h_off = static_cast<int>(draws.engine()() % (size.height - 5 + 1));
    at.w_off = static_cast<int>(draws.engine()() % (size.width - 5 + 1));
    ASSERT_EQ(run(transformer, datum, random),
              reference(datum, size, cv::INTER_NEAREST, 5, at, 1.0f, centre))
        << "repeat " << repeat;
  }
  // A mean smaller than the crop, or of other channels, is refused.
  const DataTransformer too_large(
      transform_param("img_rand_resize_lower: 7 img_rand_resize_upper: 20 crop_size: 10 "
                      "mean_file: '" +
                      dir.file("mean.binaryproto") + "'"),
      TRAIN, kOwner);
  std::string message = error_of([&] { too_large.check_input_shape(DatumShape{2, 16, 19}); });
  EXPECT_NE(message.find("has shape (1, 2, 9, 11)"), std::string::npos) << message;
  EXPECT_NE(message.find("at least crop_size 10"), std::string::npos) << message;
  message = error_of([&] { transformer.check_input_shape(DatumShape{3, 16, 19}); });
  EXPECT_NE(message.find("(1, 3, H, W)"), std::string::npos) << message;
}

// Float Datums are resized as floats.
TEST(RandomResizeTransform, FloatDatumsAreResizedAsFloats) {
  Datum datum;
  datum.set_channels(1);
  datum.set_height(6);
  datum.set_width(8);
  for (int i = 0; i < 48; ++i) datum.add_float_data(0.5f * static_cast<float>(i));
  const DataTransformer transformer(
      transform_param("img_rand_resize_lower: 4 img_rand_resize_upper: 4 crop_size: 4 "
                      "interpolation_algo_down: INTER_LINEAR"),
      TEST, kOwner);
  RandomStream random(1);
  const std::vector<float> out = run(transformer, datum, random);
  // 6 x 8 -> 4 x 5 (lround(5.33)), centre crop from (0, 0).
  cv::Mat source(6, 8, CV_32FC1, datum.mutable_float_data()->mutable_data());
  cv::Mat resized;
  cv::resize(source, resized, cv::Size(5, 4), 0, 0, cv::INTER_LINEAR);
  for (int h = 0; h < 4; ++h)
    for (int w = 0; w < 4; ++w) EXPECT_EQ(out[h * 4 + w], resized.at<float>(h, w));
}

}  // namespace
}  // namespace xtrain

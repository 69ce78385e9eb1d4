// DataTransformer against a naive reference of Caffe's transform:
//   y[c][h][w] = (x[c][h_off + h][w_off + w'] - mean) * scale,
// w' = w or K - 1 - w when mirrored; random draws in the order mirror, h_off,
// w_off (TRAIN), centred crop (TEST); mirroring in both phases, as Caffe.
#include "data/data_transformer.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "error_message.hpp"
#include "pattern_images.hpp"
#include "proto_text.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using namespace testing;

TransformationParameter transform_param(const std::string& text) {
  return testing::parse<TransformationParameter>(text);
}

// A uint8 Datum whose pixel (c, h, w) is c * 100 + h * 10 + w.
Datum positional_datum(int channels, int height, int width) {
  std::vector<unsigned char> pixels;
  for (int c = 0; c < channels; ++c)
    for (int h = 0; h < height; ++h)
      for (int w = 0; w < width; ++w)
        pixels.push_back(static_cast<unsigned char>(c * 100 + h * 10 + w));
  return make_datum(DatumShape{channels, height, width}, pixels.data(), 3);
}

struct Placement {
  int h_off = 0;
  int w_off = 0;
  bool mirror = false;
};

// The naive transform; mean(c, h, w) is indexed in the full image.
std::vector<float> reference(const Datum& datum, int crop, Placement at, float scale,
                             const std::function<float(int, int, int)>& mean) {
  const DatumShape in = datum_shape(datum);
  const int out_h = crop ? crop : in.height;
  const int out_w = crop ? crop : in.width;
  std::vector<float> x(in.count());
  datum_to_floats(datum, x.data());
  std::vector<float> y(static_cast<std::size_t>(in.channels) * out_h * out_w);
  for (int c = 0; c < in.channels; ++c)
    for (int h = 0; h < out_h; ++h)
      for (int w = 0; w < out_w; ++w) {
        const int source_w = at.w_off + (at.mirror ? out_w - 1 - w : w);
        const int source_h = at.h_off + h;
        y[(c * out_h + h) * out_w + w] =
            (x[(c * in.height + source_h) * in.width + source_w] - mean(c, source_h, source_w)) *
            scale;
      }
  return y;
}

float no_mean(int, int, int) { return 0.0f; }

std::vector<float> transform(const DataTransformer& transformer, const Datum& datum,
                             RandomStream& random) {
  transformer.check_input_shape(datum_shape(datum));
  std::vector<float> out(transformer.output_shape(datum_shape(datum)).count());
  transformer.transform(datum, random, out.data());
  return out;
}

using testing::error_of;

std::string write_mean_file(const TempDir& dir, const std::string& name,
                            const std::vector<int>& shape, bool legacy_fields,
                            const std::function<float(int, int, int)>& mean) {
  BlobProto proto;
  if (legacy_fields) {
    proto.set_num(shape[0]);
    proto.set_channels(shape[1]);
    proto.set_height(shape[2]);
    proto.set_width(shape[3]);
  } else {
    for (int dim : shape) proto.mutable_shape()->add_dim(dim);
  }
  for (int c = 0; c < shape[1]; ++c)
    for (int h = 0; h < shape[2]; ++h)
      for (int w = 0; w < shape[3]; ++w) proto.add_data(mean(c, h, w));
  write_proto_to_binary_file(proto, dir.file(name));
  return dir.file(name);
}

const char* kOwner = "layer 'data' (Data)";

TEST(DataTransformer, ScaleOnly) {
  const DataTransformer transformer(transform_param("scale: 0.00390625"), TRAIN, kOwner);
  const Datum datum = positional_datum(2, 3, 4);
  RandomStream random(1);
  EXPECT_EQ(transform(transformer, datum, random), reference(datum, 0, {}, 0.00390625f, no_mean));
  EXPECT_EQ(transformer.output_shape(datum_shape(datum)), (DatumShape{2, 3, 4}));
}

TEST(DataTransformer, FloatDataDatum) {
  Datum datum;
  datum.set_channels(1);
  datum.set_height(1);
  datum.set_width(3);
  for (float v : {-1.5f, 0.25f, 7.0f}) datum.add_float_data(v);
  const DataTransformer transformer(transform_param("scale: 2 mean_value: 1"), TEST, kOwner);
  RandomStream random(1);
  EXPECT_EQ(transform(transformer, datum, random), (std::vector<float>{-5.0f, -1.5f, 12.0f}));
}

TEST(DataTransformer, OneMeanValueForAllChannels) {
  const DataTransformer transformer(transform_param("mean_value: 50 scale: 0.5"), TEST, kOwner);
  const Datum datum = positional_datum(3, 2, 2);
  RandomStream random(1);
  EXPECT_EQ(transform(transformer, datum, random),
            reference(datum, 0, {}, 0.5f, [](int, int, int) { return 50.0f; }));
}

TEST(DataTransformer, OneMeanValuePerChannel) {
  const DataTransformer transformer(
      transform_param("mean_value: 1 mean_value: 102 mean_value: 203"), TEST, kOwner);
  const Datum datum = positional_datum(3, 2, 2);
  RandomStream random(1);
  EXPECT_EQ(transform(transformer, datum, random),
            reference(datum, 0, {}, 1.0f, [](int c, int, int) { return c * 101.0f + 1.0f; }));
}

TEST(DataTransformer, MeanValueCountMustMatchChannels) {
  const DataTransformer transformer(transform_param("mean_value: 1 mean_value: 2"), TEST, kOwner);
  const std::string message = error_of([&] { transformer.check_input_shape(DatumShape{3, 4, 4}); });
  EXPECT_NE(message.find(kOwner), std::string::npos) << message;
  EXPECT_NE(message.find("2 mean_value entries for images with 3 channels"), std::string::npos)
      << message;
}

TEST(DataTransformer, MeanFileAndMeanValueAreExclusive) {
  const std::string message = error_of([] {
    DataTransformer(transform_param("mean_file: 'm.binaryproto' mean_value: 1"), TRAIN, kOwner);
  });
  EXPECT_NE(message.find("both mean_file and mean_value"), std::string::npos) << message;
}

TEST(DataTransformer, MeanFileInLegacyAndShapeFormat) {
  TempDir dir("transformer");
  const auto mean = [](int c, int h, int w) { return 0.5f * (c + 1) + h - 0.25f * w; };
  const Datum datum = positional_datum(2, 3, 4);
  for (bool legacy : {true, false}) {
    const std::string path = write_mean_file(
        dir, legacy ? "legacy.binaryproto" : "shape.binaryproto", {1, 2, 3, 4}, legacy, mean);
    const DataTransformer transformer(transform_param("scale: 0.1 mean_file: '" + path + "'"), TEST,
                                      kOwner);
    RandomStream random(1);
    EXPECT_EQ(transform(transformer, datum, random), reference(datum, 0, {}, 0.1f, mean))
        << (legacy ? "legacy" : "shape");
  }
}

TEST(DataTransformer, MeanFileOfWrongSizeNamesFileAndShapes) {
  TempDir dir("transformer");
  const std::string path = write_mean_file(dir, "mean.binaryproto", {1, 1, 3, 3}, true,
                                           [](int, int, int) { return 1.0f; });
  const DataTransformer transformer(transform_param("mean_file: '" + path + "'"), TRAIN, kOwner);
  const std::string message = error_of([&] { transformer.check_input_shape(DatumShape{1, 2, 3}); });
  EXPECT_NE(message.find(kOwner), std::string::npos) << message;
  EXPECT_NE(message.find("mean file '" + path + "' has shape (1, 1, 3, 3)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("data has shape 1x2x3"), std::string::npos) << message;
}

TEST(DataTransformer, MissingMeanFileIsNamed) {
  TempDir dir("transformer");
  const std::string path = dir.file("absent.binaryproto");
  const std::string message = error_of(
      [&] { DataTransformer(transform_param("mean_file: '" + path + "'"), TRAIN, kOwner); });
  EXPECT_NE(message.find(kOwner), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
}

TEST(DataTransformer, CropAtTestIsCentred) {
  const DataTransformer transformer(transform_param("crop_size: 3"), TEST, kOwner);
  const Datum datum = positional_datum(2, 4, 6);
  EXPECT_EQ(transformer.output_shape(datum_shape(datum)), (DatumShape{2, 3, 3}));
  RandomStream random(7);
  // h_off = (4 - 3) / 2 = 0, w_off = (6 - 3) / 2 = 1.
  for (int repeat = 0; repeat < 10; ++repeat) {
    EXPECT_EQ(transform(transformer, datum, random),
              reference(datum, 3, {0, 1, false}, 1.0f, no_mean));
  }
}

// Caffe 1.0 flips at random in TEST too when mirror: true; the crop stays
// centred.
TEST(DataTransformer, MirrorAtTestFlipsLikeCaffe) {
  const DataTransformer transformer(transform_param("crop_size: 3 mirror: true"), TEST, kOwner);
  const Datum datum = positional_datum(2, 4, 6);
  RandomStream random(7);
  const std::vector<float> plain = reference(datum, 3, {0, 1, false}, 1.0f, no_mean);
  const std::vector<float> mirrored = reference(datum, 3, {0, 1, true}, 1.0f, no_mean);
  int flips = 0;
  for (int repeat = 0; repeat < 40; ++repeat) {
    const std::vector<float> out = transform(transformer, datum, random);
    ASSERT_TRUE(out == plain || out == mirrored);
    flips += out == mirrored;
  }
  EXPECT_GT(flips, 5);
  EXPECT_LT(flips, 35);
}

TEST(DataTransformer, CropLargerThanImageIsAnError) {
  const DataTransformer transformer(transform_param("crop_size: 5"), TRAIN, kOwner);
  const std::string message = error_of([&] { transformer.check_input_shape(DatumShape{1, 4, 6}); });
  EXPECT_NE(message.find("crop_size 5 is larger than the images (1x4x6)"), std::string::npos)
      << message;
}

TEST(DataTransformer, CropAtTrainIsRandomWithinBounds) {
  const DataTransformer transformer(transform_param("crop_size: 3"), TRAIN, kOwner);
  const Datum datum = positional_datum(2, 5, 6);
  RandomStream random(11);
  std::set<std::pair<int, int>> offsets;
  for (int repeat = 0; repeat < 300; ++repeat) {
    const std::vector<float> out = transform(transformer, datum, random);
    // The first output pixel is h_off * 10 + w_off.
    const Placement at{static_cast<int>(out[0]) / 10, static_cast<int>(out[0]) % 10, false};
    ASSERT_GE(at.h_off, 0);
    ASSERT_LE(at.h_off, 5 - 3);
    ASSERT_GE(at.w_off, 0);
    ASSERT_LE(at.w_off, 6 - 3);
    ASSERT_EQ(out, reference(datum, 3, at, 1.0f, no_mean));
    offsets.insert({at.h_off, at.w_off});
  }
  EXPECT_EQ(offsets.size(), 3u * 4u);  // every placement happens
}

TEST(DataTransformer, MirrorAtTrainIsACoinFlip) {
  const DataTransformer transformer(transform_param("mirror: true"), TRAIN, kOwner);
  const Datum datum = positional_datum(1, 2, 5);
  const std::vector<float> plain = reference(datum, 0, {0, 0, false}, 1.0f, no_mean);
  const std::vector<float> mirrored = reference(datum, 0, {0, 0, true}, 1.0f, no_mean);
  RandomStream random(5);
  int flips = 0;
  for (int repeat = 0; repeat < 200; ++repeat) {
    const std::vector<float> out = transform(transformer, datum, random);
    ASSERT_TRUE(out == plain || out == mirrored);
    flips += out == mirrored;
  }
  EXPECT_GT(flips, 60);
  EXPECT_LT(flips, 140);

  // Without mirror: true, never mirrored.
  const DataTransformer no_mirror(transform_param("crop_size: 0"), TRAIN, kOwner);
  for (int repeat = 0; repeat < 20; ++repeat) EXPECT_EQ(transform(no_mirror, datum, random), plain);
}

// The exact draws: mirror = r() % 2, then h_off = r() % (H - K + 1), then
// w_off = r() % (W - K + 1), one 32-bit r() each. The mean file is indexed
// in the full image, so it moves with the crop.
TEST(DataTransformer, TrainDrawsMirrorThenOffsetsAndSameSeedRepeats) {
  TempDir dir("transformer");
  const auto mean = [](int c, int h, int w) { return 0.5f * c + 0.25f * h + 0.125f * w; };
  const std::string mean_path = write_mean_file(dir, "mean.binaryproto", {1, 3, 7, 8}, true, mean);
  const DataTransformer transformer(
      transform_param("crop_size: 4 mirror: true scale: 0.5 mean_file: '" + mean_path + "'"), TRAIN,
      kOwner);
  const Datum datum = positional_datum(3, 7, 8);
  RandomStream random(2024);
  RandomStream replay(2024);
  RandomStream draws(2024);
  for (int repeat = 0; repeat < 50; ++repeat) {
    Placement at;
    at.mirror = draws.engine()() % 2 != 0;
    at.h_off = static_cast<int>(draws.engine()() % (7 - 4 + 1));
    at.w_off = static_cast<int>(draws.engine()() % (8 - 4 + 1));
    const std::vector<float> out = transform(transformer, datum, random);
    ASSERT_EQ(out, reference(datum, 4, at, 0.5f, mean)) << "repeat " << repeat;
    ASSERT_EQ(transform(transformer, datum, replay), out);
  }
}

// ---------------------------------------------------------------------------
// Encoded Datums: decoded (force_color / force_gray / as stored), then the
// same transform as for the unencoded Datum of the decoded pixels.
// ---------------------------------------------------------------------------

// The unencoded Datum (planar) holding an OpenCV image's pixels.
Datum planar_datum(const cv::Mat& mat) {
  const std::vector<float> values = planar_floats(mat);
  const std::vector<unsigned char> pixels(values.begin(), values.end());
  return make_datum(DatumShape{mat.channels(), mat.rows, mat.cols}, pixels.data(), 0);
}

std::vector<float> as_floats(const Datum& datum) {
  std::vector<float> values(datum_shape(datum).count());
  datum_to_floats(datum, values.data());
  return values;
}

TEST(DataTransformer, ForceColorAndForceGrayTogetherIsAnError) {
  const std::string message = error_of([] {
    DataTransformer(transform_param("force_color: true force_gray: true"), TRAIN, kOwner);
  });
  EXPECT_NE(message.find(kOwner), std::string::npos) << message;
  EXPECT_NE(message.find("both force_color and force_gray"), std::string::npos) << message;
}

// scale: 1e39 is inf as a float: every input became nan, and the test
// accuracy read 1 (a nan score compared false everywhere).
TEST(DataTransformer, ScalesAndMeansThatAreNoNumberAreErrors) {
  for (const auto& [text, said] :
       {std::pair<const char*, const char*>{"scale: nan", "transform_param's scale is nan"},
        {"scale: 1e39", "transform_param's scale is inf, not a finite number"},
        {"mean_value: inf", "mean_value: inf, not a finite number"}}) {
    const std::string message =
        error_of([&] { DataTransformer(transform_param(text), TEST, kOwner); });
    EXPECT_NE(message.find(kOwner), std::string::npos) << message;
    EXPECT_NE(message.find(said), std::string::npos) << text << " gave: " << message;
  }
}

TEST(DataTransformer, ColorModeAndRandomUse) {
  EXPECT_EQ(DataTransformer(transform_param(""), TRAIN, kOwner).color_mode(), ColorMode::kAsStored);
  EXPECT_EQ(DataTransformer(transform_param("force_color: true"), TRAIN, kOwner).color_mode(),
            ColorMode::kColor);
  EXPECT_EQ(DataTransformer(transform_param("force_gray: true"), TRAIN, kOwner).color_mode(),
            ColorMode::kGray);
  EXPECT_FALSE(DataTransformer(transform_param("scale: 2"), TRAIN, kOwner).uses_random());
  EXPECT_FALSE(DataTransformer(transform_param("crop_size: 2"), TEST, kOwner).uses_random());
  EXPECT_TRUE(DataTransformer(transform_param("crop_size: 2"), TRAIN, kOwner).uses_random());
  EXPECT_TRUE(DataTransformer(transform_param("mirror: true"), TEST, kOwner).uses_random());
}

TEST(DataTransformer, EncodedPngDecodesToExactPixels) {
  const cv::Mat color = pattern_mat(3, 5, 7);
  const Datum datum = encoded_datum(encode_mat(color, ".png"), 4);
  const DataTransformer transformer(transform_param(""), TEST, kOwner);
  EXPECT_EQ(transformer.decoded_shape(datum), (DatumShape{3, 5, 7}));
  RandomStream random(1);
  std::vector<float> out(3 * 5 * 7);
  transformer.transform(datum, random, out.data());
  EXPECT_EQ(out, as_floats(planar_datum(color)));  // B, G, R planes, lossless
}

TEST(DataTransformer, ForceGrayAndForceColorDecodeLikeOpenCV) {
  const cv::Mat color = pattern_mat(3, 6, 4, 9);
  const cv::Mat gray = pattern_mat(1, 6, 4, 5);
  const std::string color_png = encode_mat(color, ".png");
  const std::string gray_png = encode_mat(gray, ".png");
  struct Case {
    std::string bytes;
    std::string param;
    int imread_flags;
    int channels;
  };
  const std::vector<Case> cases = {
      {color_png, "force_gray: true", cv::IMREAD_GRAYSCALE, 1},
      {color_png, "force_color: true", cv::IMREAD_COLOR, 3},
      {color_png, "", cv::IMREAD_COLOR, 3},
      {gray_png, "force_color: true", cv::IMREAD_COLOR, 3},  // grey replicated
      {gray_png, "", cv::IMREAD_GRAYSCALE, 1},               // as stored
      {gray_png, "force_gray: true", cv::IMREAD_GRAYSCALE, 1},
  };
  for (const Case& test : cases) {
    const DataTransformer transformer(transform_param(test.param), TRAIN, kOwner);
    const Datum datum = encoded_datum(test.bytes, 0);
    const cv::Mat expected = decode_bytes(test.bytes, test.imread_flags);
    ASSERT_EQ(expected.channels(), test.channels);
    EXPECT_EQ(transformer.decoded_shape(datum), (DatumShape{test.channels, 6, 4})) << test.param;
    RandomStream random(1);
    std::vector<float> out(static_cast<std::size_t>(test.channels) * 6 * 4);
    transformer.transform(datum, random, out.data());
    EXPECT_EQ(out, as_floats(planar_datum(expected))) << test.param;
    // The image codec (convert_imageset, compute_image_mean) decodes alike.
    const Image image = decode_image(test.bytes, transformer.color_mode(), "test image");
    EXPECT_EQ(out, std::vector<float>(image.pixels.begin(), image.pixels.end())) << test.param;
  }
}

// A lossy JPEG: the crop, mirror and mean file act on the decoded pixels
// exactly as on an unencoded Datum of them, with the same draws.
TEST(DataTransformer, EncodedJpegTransformsLikeItsDecodedPixels) {
  TempDir dir("transformer");
  const auto mean = [](int c, int h, int w) { return 3.0f * c + 0.5f * h - 0.25f * w; };
  const std::string mean_path = write_mean_file(dir, "mean.binaryproto", {1, 3, 9, 11}, true, mean);
  const cv::Mat color = pattern_mat(3, 9, 11, 17);
  const std::string jpeg = encode_mat(color, ".jpg");
  const Datum decoded = planar_datum(decode_bytes(jpeg, cv::IMREAD_COLOR));
  const Datum encoded = encoded_datum(jpeg, 1);
  for (Phase phase : {TRAIN, TEST}) {
    const DataTransformer transformer(
        transform_param("crop_size: 5 mirror: true scale: 0.25 mean_file: '" + mean_path + "'"),
        phase, kOwner);
    RandomStream from_encoded(99);
    RandomStream from_decoded(99);
    for (int repeat = 0; repeat < 30; ++repeat) {
      const std::vector<float> expected = transform(transformer, decoded, from_decoded);
      std::vector<float> out(expected.size());
      transformer.transform(encoded, from_encoded, out.data());
      ASSERT_EQ(out, expected) << "repeat " << repeat;
    }
  }
}

TEST(DataTransformer, UndecodableEncodedDatumIsAnError) {
  const DataTransformer transformer(transform_param(""), TRAIN, kOwner);
  const Datum datum = encoded_datum("definitely not an image", 0);
  const std::string message = error_of([&] { transformer.decoded_shape(datum); });
  EXPECT_NE(message.find("is not an image xtrain decodes"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain

// The image codec and image -> Datum conversion against OpenCV's own
// decoding of the same bytes: the planar B, G, R layout, colour modes,
// resizing, encoding, and Caffe's rules for what an encoded Datum holds.
#include "xtrain/image_codec.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "image_fixtures.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_datum.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::string encode_with_opencv(const cv::Mat& mat, const std::string& extension) {
  std::vector<std::uint8_t> buffer;
  EXPECT_TRUE(cv::imencode(extension, mat, buffer));
  return std::string(buffer.begin(), buffer.end());
}

std::string pixels_of(const Image& image) {
  return std::string(image.pixels.begin(), image.pixels.end());
}

TEST(ImageCodec, ColourIsPlanarInBlueGreenRedOrder) {
  cv::Mat mat(2, 3, CV_8UC3);
  for (int h = 0; h < 2; ++h) {
    for (int w = 0; w < 3; ++w)
      mat.at<cv::Vec3b>(h, w) = cv::Vec3b(10 + w, 100 + h, 200 + h * 3 + w);
  }
  const Image image = decode_image(encode_with_opencv(mat, ".png"), ColorMode::kColor, "test");
  ASSERT_EQ(image.channels, 3);
  ASSERT_EQ(image.height, 2);
  ASSERT_EQ(image.width, 3);
  // c * H * W + h * W + w, channel 0 = blue (what OpenCV stores first).
  const std::vector<std::uint8_t> expected = {10,  11,  12,  10,  11,  12,  100, 100, 100,
                                              101, 101, 101, 200, 201, 202, 203, 204, 205};
  EXPECT_EQ(image.pixels, expected);
}

TEST(ImageCodec, DecodesExactlyAsOpenCvInEveryColourMode) {
  const cv::Mat colour = colour_pattern(37, 53, 4);
  cv::Mat grey;
  cv::cvtColor(colour, grey, cv::COLOR_BGR2GRAY);
  for (const std::string extension : {".png", ".jpg", ".bmp"}) {
    const std::string colour_bytes = encode_with_opencv(colour, extension);
    const std::string grey_bytes = encode_with_opencv(grey, extension);
    const cv::Mat raw_colour(1, static_cast<int>(colour_bytes.size()), CV_8UC1,
                             const_cast<char*>(colour_bytes.data()));
    const cv::Mat raw_grey(1, static_cast<int>(grey_bytes.size()), CV_8UC1,
                           const_cast<char*>(grey_bytes.data()));
    SCOPED_TRACE(extension);

    // Each mode against OpenCV's decoding of the same bytes.
    struct Decoding {
      const char* what;
      const cv::Mat& raw;
      ColorMode mode;
      int opencv_mode;
      int channels;
    };
    for (const Decoding& d :
         {Decoding{"colour", raw_colour, ColorMode::kColor, cv::IMREAD_COLOR, 3},
          Decoding{"colour as grey", raw_colour, ColorMode::kGray, cv::IMREAD_GRAYSCALE, 1},
          Decoding{"colour as stored", raw_colour, ColorMode::kAsStored, cv::IMREAD_COLOR, 3},
          Decoding{"grey as stored", raw_grey, ColorMode::kAsStored, cv::IMREAD_GRAYSCALE, 1}}) {
      const std::string bytes(d.raw.ptr<char>(), d.raw.total());
      const Image image = decode_image(bytes, d.mode, d.what);
      EXPECT_EQ(image.channels, d.channels) << d.what;
      EXPECT_EQ(pixels_of(image), planar_bytes(cv::imdecode(d.raw, d.opencv_mode))) << d.what;
    }

    const Image image = decode_image(grey_bytes, ColorMode::kColor, "grey as colour");
    ASSERT_EQ(image.channels, 3);
    const std::string planes = pixels_of(image);
    const std::size_t plane = 37 * 53;
    EXPECT_EQ(planes.substr(0, plane), planes.substr(plane, plane));  // replicated
    EXPECT_EQ(planes.substr(0, plane), planes.substr(2 * plane, plane));
  }
}

TEST(ImageCodec, PngRoundTripIsExact) {
  Image image;
  image.channels = 3;
  image.height = 5;
  image.width = 7;
  for (int i = 0; i < 3 * 5 * 7; ++i) image.pixels.push_back(static_cast<std::uint8_t>(i * 37));
  const Image back = decode_image(encode_image(image, "png"), ColorMode::kAsStored, "round trip");
  EXPECT_EQ(back.pixels, image.pixels);
  image.channels = 1;
  image.pixels.resize(5 * 7);
  EXPECT_EQ(decode_image(encode_image(image, ".png"), ColorMode::kAsStored, "grey").pixels,
            image.pixels);
  // JPEG is lossy but keeps the shape.
  const Image jpeg = decode_image(encode_image(image, "jpg"), ColorMode::kAsStored, "jpeg");
  EXPECT_EQ(jpeg.channels, 1);
  EXPECT_EQ(jpeg.height, 5);
  EXPECT_EQ(jpeg.width, 7);
}

TEST(ImageCodec, ResizesLikeCaffeOnTheInterleavedImage) {
  const cv::Mat colour = colour_pattern(40, 60, 2);
  const std::string bytes = encode_with_opencv(colour, ".png");
  cv::Mat expected;
  cv::resize(colour, expected, cv::Size(25, 17));  // width 25, height 17; bilinear
  const Image decoded = decode_and_resize(bytes, ColorMode::kColor, 17, 25, "resize");
  EXPECT_EQ(decoded.height, 17);
  EXPECT_EQ(decoded.width, 25);
  EXPECT_EQ(pixels_of(decoded), planar_bytes(expected));
  const Image full = decode_image(bytes, ColorMode::kColor, "full");
  EXPECT_EQ(pixels_of(resize_image(full, 17, 25)), planar_bytes(expected));
  cv::Mat larger;
  cv::resize(colour, larger, cv::Size(90, 80));
  EXPECT_EQ(pixels_of(resize_image(full, 80, 90)), planar_bytes(larger));

  expect_error([&] { decode_and_resize(bytes, ColorMode::kColor, 17, 0, "'a.png'"); },
               {"give both height and width"});
  // 100000 x 100000 asked OpenCV for 30 GB and passed its raw allocation
  // error on (or the machine ran out of memory).
  expect_error([&] { resize_image(full, 100000, 100000); },
               {"cannot resize an image to 100000x100000",
                "more pixels than an image xtrain "
                "decodes (2^30)"});
}

TEST(ImageCodec, ReadsFilesAndNamesTheBadOnes) {
  TempDir dir("image_codec");
  const cv::Mat colour = colour_pattern(12, 9, 1);
  ASSERT_TRUE(cv::imwrite(dir.file("a.png"), colour));
  const Image image = read_image_file(dir.file("a.png"), ColorMode::kColor, 6, 4);
  cv::Mat expected;
  cv::resize(colour, expected, cv::Size(4, 6));
  EXPECT_EQ(pixels_of(image), planar_bytes(expected));
  EXPECT_EQ(read_file_bytes(dir.file("a.png")), testing::file_bytes(dir.file("a.png")));

  const std::string missing =
      error_of([&] { read_image_file(dir.file("nope.png"), ColorMode::kColor); });
  EXPECT_NE(missing.find("cannot open '" + dir.file("nope.png") + "'"), std::string::npos)
      << missing;
  dir.write("text.jpg", "this is not a JPEG\n");
  const std::string garbage =
      error_of([&] { read_image_file(dir.file("text.jpg"), ColorMode::kColor); });
  EXPECT_NE(garbage.find("'" + dir.file("text.jpg") +
                         "' is not an image xtrain decodes: its first bytes are not those of a "
                         "JPEG, PNG, BMP, TIFF, WebP, JPEG 2000 or PNM file"),
            std::string::npos)
      << garbage;
  dir.write("cut.png", std::string("\x89PNG\r\n\x1a\n", 8) + "and then nothing of a PNG");
  const std::string cut =
      error_of([&] { read_image_file(dir.file("cut.png"), ColorMode::kColor); });
  EXPECT_NE(cut.find("'" + dir.file("cut.png") + "' is not an image OpenCV can decode"),
            std::string::npos)
      << cut;
  dir.write("empty.png", "");
  expect_error([&] { read_image_file(dir.file("empty.png"), ColorMode::kColor); },
               {"is empty, not an image"});
  expect_error([&] { decode_image("garbage", ColorMode::kGray, "record 'k7' of LMDB 'x'"); },
               {"record 'k7' of LMDB 'x' is not an image"});
}

// Found by fuzz/image_fuzzer: OpenCV tried its DICOM codec on these bytes
// (a 128-byte preamble, then "DICM"), and GDCM's assert aborted the process.
// Only the formats a training image comes in reach OpenCV now.
TEST(ImageCodec, BytesOfOtherFormatsNeverReachOpenCV) {
  const std::string dicom_looking = std::string("\x89PNNG\r\n\x1a\n\0G\r\n\x1a\n\0\0\0\r\0\0", 21) +
                                    std::string(96, '\xff') +
                                    std::string("IHDR\0\0\0N\0BEDICM`\x82", 17);
  ASSERT_EQ(dicom_looking.size(), 134u);
  const std::string message =
      error_of([&] { decode_image(dicom_looking, ColorMode::kColor, "'scan.png'"); });
  EXPECT_NE(message.find("'scan.png' is not an image xtrain decodes"), std::string::npos)
      << message;
  for (const char* radiance_hdr : {"#?RADIANCE\n", "#?RGBE\n"}) {
    expect_error([&] { decode_image(radiance_hdr, ColorMode::kColor, "'sky.hdr'"); },
                 {"is not an image xtrain decodes"});
  }
}

TEST(ImageCodec, EncodesKnownFormatsOnly) {
  EXPECT_TRUE(can_encode_as("png"));
  EXPECT_TRUE(can_encode_as("jpg"));
  EXPECT_TRUE(can_encode_as(".jpeg"));
  EXPECT_FALSE(can_encode_as("docx"));
  EXPECT_FALSE(can_encode_as(""));
  Image image;
  image.channels = 1;
  image.height = image.width = 2;
  image.pixels = {1, 2, 3, 4};
  expect_error([&] { encode_image(image, "docx"); }, {"cannot encode images as 'docx'"});
  image.channels = 2;
  image.pixels.resize(8);
  expect_error([&] { encode_image(image, "png"); }, {"2 channels"});
}

TEST(ImageDatum, FileExtensionsAsCaffeMatchesThem) {
  EXPECT_EQ(file_extension("a/b.JPG"), "jpg");
  EXPECT_EQ(file_extension("dir.v2/file"), "");
  EXPECT_EQ(file_extension("x.tar.PNG"), "png");
  EXPECT_TRUE(file_has_format("a.jpeg", "jpg"));
  EXPECT_TRUE(file_has_format("a.JPG", "JPG"));
  EXPECT_TRUE(file_has_format("a.png", ".png"));
  EXPECT_FALSE(file_has_format("a.jpg", "jpeg"));  // Caffe's matchExt is one-way
  EXPECT_FALSE(file_has_format("a.png", "jpg"));
}

TEST(ImageDatum, UnencodedHoldsPlanarPixelsAndShape) {
  TempDir dir("image_datum");
  const cv::Mat colour = colour_pattern(10, 14, 3);
  ASSERT_TRUE(cv::imwrite(dir.file("c.png"), colour));
  ImageDatum converted = read_image_to_datum(dir.file("c.png"), 7, ImageDatumOptions{});
  EXPECT_EQ(converted.datum.channels(), 3);
  EXPECT_EQ(converted.datum.height(), 10);
  EXPECT_EQ(converted.datum.width(), 14);
  EXPECT_EQ(converted.datum.label(), 7);
  EXPECT_FALSE(converted.datum.encoded());
  EXPECT_EQ(converted.datum.data(), planar_bytes(colour));
  EXPECT_EQ(converted.shape, (DatumShape{3, 10, 14}));

  ImageDatumOptions grey;
  grey.color = ColorMode::kGray;
  grey.resize_height = 5;
  grey.resize_width = 6;
  converted = read_image_to_datum(dir.file("c.png"), 1, grey);
  cv::Mat expected = cv::imread(dir.file("c.png"), cv::IMREAD_GRAYSCALE);
  cv::resize(expected, expected, cv::Size(6, 5));
  EXPECT_EQ(converted.shape, (DatumShape{1, 5, 6}));
  EXPECT_EQ(converted.datum.data(), planar_bytes(expected));
  EXPECT_EQ(
      datum_to_image(converted.datum, ColorMode::kAsStored, "d").pixels,
      std::vector<std::uint8_t>(converted.datum.data().begin(), converted.datum.data().end()));
  expect_error([&] { datum_to_image(converted.datum, ColorMode::kColor, "record 'r'"); },
               {"record 'r' holds 1-channel pixels"});
}

TEST(ImageDatum, EncodedKeepsTheFileBytesWhenItCan) {
  TempDir dir("image_datum");
  const cv::Mat colour = colour_pattern(20, 30, 5);
  ASSERT_TRUE(cv::imwrite(dir.file("c.jpeg"), colour));
  const std::string file = testing::file_bytes(dir.file("c.jpeg"));
  const cv::Mat decoded = cv::imread(dir.file("c.jpeg"), cv::IMREAD_COLOR);

  ImageDatumOptions options;
  options.encoded = true;
  for (const std::string type : {"", "jpg", "JPEG"}) {
    options.encode_type = type;
    const ImageDatum same = read_image_to_datum(dir.file("c.jpeg"), 2, options);
    EXPECT_TRUE(same.datum.encoded()) << type;
    EXPECT_EQ(same.datum.data(), file) << type;
    EXPECT_EQ(same.datum.label(), 2);
    EXPECT_FALSE(same.datum.has_channels());  // as Caffe: the decoder finds the shape
    EXPECT_EQ(same.shape, (DatumShape{3, 20, 30}));
  }
  // --gray with the file's own format still stores the file (Caffe does).
  options.encode_type = "";
  options.color = ColorMode::kGray;
  ImageDatum grey = read_image_to_datum(dir.file("c.jpeg"), 2, options);
  EXPECT_EQ(grey.datum.data(), file);
  EXPECT_EQ(grey.shape, (DatumShape{1, 20, 30}));

  // Another format: decoded and re-encoded, losslessly for PNG.
  options.color = ColorMode::kColor;
  options.encode_type = "png";
  ImageDatum png = read_image_to_datum(dir.file("c.jpeg"), 2, options);
  EXPECT_NE(png.datum.data(), file);
  EXPECT_EQ(pixels_of(datum_to_image(png.datum, ColorMode::kAsStored, "png")),
            planar_bytes(decoded));

  // A resize always re-encodes, as the file's extension when no type is given.
  options.encode_type = "";
  options.resize_height = 8;
  options.resize_width = 9;
  ImageDatum resized = read_image_to_datum(dir.file("c.jpeg"), 2, options);
  const std::string& data = resized.datum.data();
  ASSERT_GE(data.size(), 2u);
  EXPECT_EQ(static_cast<std::uint8_t>(data[0]), 0xFF);  // a JPEG
  EXPECT_EQ(static_cast<std::uint8_t>(data[1]), 0xD8);
  const Image back = datum_to_image(resized.datum, ColorMode::kAsStored, "resized");
  EXPECT_EQ(back.height, 8);
  EXPECT_EQ(back.width, 9);
  EXPECT_EQ(resized.shape, (DatumShape{3, 8, 9}));

  // Without an extension there is no format to re-encode to.
  const std::string bytes = testing::file_bytes(dir.file("c.jpeg"));
  expect_error(
      [&] { image_bytes_to_datum(bytes, dir.file("noext"), 0, options, "'noext' (list line 4)"); },
      {"cannot tell which format to encode 'noext' (list line 4) in"});
  options.resize_height = options.resize_width = 0;
  EXPECT_EQ(image_bytes_to_datum(bytes, dir.file("noext"), 0, options, "noext").datum.data(),
            bytes);
}

}  // namespace
}  // namespace xtrain

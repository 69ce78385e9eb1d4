// The pixel size read from PNG and JPEG headers, and images whose header
// claims too many pixels refused with one clear line.
#include "data/image_header.hpp"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <vector>

#include "image_fixtures.hpp"
#include "layer_test_support.hpp"
#include "xtrain/image_codec.hpp"

namespace xtrain {
namespace {

std::string encoded(const std::string& extension, int height, int width) {
  std::vector<unsigned char> bytes;
  EXPECT_TRUE(cv::imencode(extension, testing::colour_pattern(height, width, 3), bytes));
  return std::string(bytes.begin(), bytes.end());
}

TEST(ImageHeader, ReadsPngAndJpegSizes) {
  for (const char* extension : {".png", ".jpg"}) {
    SCOPED_TRACE(extension);
    const std::optional<ImageSize> size = encoded_image_size(encoded(extension, 5, 7));
    ASSERT_TRUE(size);
    EXPECT_EQ(size->width, 7u);
    EXPECT_EQ(size->height, 5u);
  }
  EXPECT_FALSE(encoded_image_size(encoded(".bmp", 5, 7))) << "other formats: unknown";
  EXPECT_FALSE(encoded_image_size("\x89PNG\r\n"));
  EXPECT_FALSE(encoded_image_size(std::string("\xFF\xD8\xFF", 3)));
}

// What OpenCV writes in each format a training image comes in is told by its
// first bytes (image_codec decodes nothing else).
TEST(ImageHeader, TellsTheFormatsXtrainDecodesByTheirFirstBytes) {
  const std::vector<std::pair<const char*, const char*>> formats = {
      {".jpg", "JPEG"},  {".png", "PNG"},   {".bmp", "BMP"},
      {".tiff", "TIFF"}, {".webp", "WebP"}, {".ppm", "PNM"}};
  for (const auto& [extension, format] : formats) {
    SCOPED_TRACE(extension);
    if (!cv::haveImageWriter(extension)) continue;
    EXPECT_EQ(encoded_image_format(encoded(extension, 5, 7)).value_or("none"), format);
  }
  // JPEG 2000 (OpenJPEG will not write one this small): its box, its codestream.
  EXPECT_EQ(encoded_image_format(std::string("\0\0\0\x0cjP  \r\n\x87\n", 12)), "JPEG 2000");
  EXPECT_EQ(encoded_image_format("\xFF\x4F\xFF\x51"), "JPEG 2000");
  EXPECT_FALSE(encoded_image_format("#?RADIANCE\n"));
  EXPECT_FALSE(encoded_image_format(std::string(128, '\0') + "DICM"));
  EXPECT_FALSE(encoded_image_format("\x89PN"));
  EXPECT_FALSE(encoded_image_format(""));
}

// A PNG whose header claims 100000 x 100000 pixels (10^10, OpenCV's limit is
// 2^30): one line naming the file and the size, not OpenCV's assertion.
TEST(ImageHeader, ImagesClaimingTooManyPixelsAreRefused) {
  std::string png = encoded(".png", 5, 7);
  for (int at : {16, 20}) {  // width, height: 100000 = 0x000186A0
    png[at] = 0;
    png[at + 1] = 0x01;
    png[at + 2] = static_cast<char>(0x86);
    png[at + 3] = static_cast<char>(0xA0);
  }
  const std::string message =
      testing::error_of([&] { decode_image(png, ColorMode::kColor, "image 'huge.png'"); });
  EXPECT_EQ(message,
            "image 'huge.png' claims 100000x100000 pixels in its header, more than can be "
            "decoded (2^30): the file is damaged, or far too large for a training image "
            "(resize it)");
}

}  // namespace
}  // namespace xtrain

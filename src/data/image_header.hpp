// The pixel size an encoded image claims in its header, read before
// decoding: a damaged or hostile file may claim billions of pixels, which
// OpenCV refuses with a raw assertion (or tries to allocate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace xtrain {

struct ImageSize {
  std::uint32_t width = 0;
  std::uint32_t height = 0;
};

// The width and height in a PNG's IHDR or a JPEG's first start-of-frame
// segment; nothing for other formats or headers too short to read.
std::optional<ImageSize> encoded_image_size(const std::string& bytes);

// The format an encoded image's first bytes name, among those xtrain decodes:
// "JPEG", "PNG", "BMP", "TIFF", "WebP", "JPEG 2000" or "PNM" (PBM, PGM, PPM,
// PAM); nothing for any other bytes. OpenCV would try every codec it has on
// them, DICOM, OpenEXR and Radiance HDR among them, and some of those abort
// the process on a damaged file (GDCM's assert on a DICOM header, found by
// fuzz/image_fuzzer) or write the bytes to a temporary file first.
std::optional<std::string> encoded_image_format(const std::string& bytes);

// The formats encoded_image_format names, for messages.
constexpr const char* kDecodedImageFormats = "JPEG, PNG, BMP, TIFF, WebP, JPEG 2000 or PNM";

// The most pixels xtrain decodes in one image: OpenCV's own limit
// (CV_IO_MAX_IMAGE_PIXELS, 2^30).
constexpr std::uint64_t kMaxDecodedPixels = std::uint64_t{1} << 30;

// What is checked before OpenCV sees a user's image bytes: throws
// xtrain::Error naming `what` unless the bytes start like one of the formats
// encoded_image_format knows, and claim at most kMaxDecodedPixels pixels.
void check_image_header(const std::string& bytes, const std::string& what);

}  // namespace xtrain

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

// The most pixels xtrain decodes in one image: OpenCV's own limit
// (CV_IO_MAX_IMAGE_PIXELS, 2^30).
constexpr std::uint64_t kMaxDecodedPixels = std::uint64_t{1} << 30;

}  // namespace xtrain

#include "data/image_header.hpp"

#include <cstring>

namespace xtrain {
namespace {

std::uint32_t big_endian(const std::string& bytes, std::size_t at, int count) {
  std::uint32_t value = 0;
  for (int i = 0; i < count; ++i) value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
  return value;
}

// PNG: an 8-byte signature, then the IHDR chunk (length, "IHDR", width,
// height, each 4 bytes big-endian).
std::optional<ImageSize> png_size(const std::string& bytes) {
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kSignature, 8) != 0) return std::nullopt;
  if (bytes.compare(12, 4, "IHDR") != 0) return std::nullopt;
  return ImageSize{big_endian(bytes, 16, 4), big_endian(bytes, 20, 4)};
}

// JPEG: segments 0xFF <marker> <2-byte length> ...; a start-of-frame
// (0xC0-0xCF except 0xC4 DHT, 0xC8 JPG, 0xCC DAC) holds the precision, then
// height and width (2 bytes each).
std::optional<ImageSize> jpeg_size(const std::string& bytes) {
  if (bytes.size() < 4 || static_cast<unsigned char>(bytes[0]) != 0xFF ||
      static_cast<unsigned char>(bytes[1]) != 0xD8) {
    return std::nullopt;
  }
  std::size_t at = 2;
  while (at + 4 <= bytes.size()) {
    if (static_cast<unsigned char>(bytes[at]) != 0xFF) return std::nullopt;
    const unsigned marker = static_cast<unsigned char>(bytes[at + 1]);
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    const std::uint32_t length = big_endian(bytes, at + 2, 2);
    const bool start_of_frame =
        marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (start_of_frame) {
      if (at + 9 > bytes.size()) return std::nullopt;
      return ImageSize{big_endian(bytes, at + 7, 2), big_endian(bytes, at + 5, 2)};
    }
    if (length < 2) return std::nullopt;
    at += 2 + length;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ImageSize> encoded_image_size(const std::string& bytes) {
  if (auto size = png_size(bytes)) return size;
  return jpeg_size(bytes);
}

}  // namespace xtrain

#include "data/image_header.hpp"

#include <cstring>

#include "xtrain/error.hpp"

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

bool starts_with(const std::string& bytes, std::size_t at, const char* signature,
                 std::size_t length) {
  return bytes.size() >= at + length && bytes.compare(at, length, signature, length) == 0;
}

}  // namespace

std::optional<std::string> encoded_image_format(const std::string& bytes) {
  if (starts_with(bytes, 0, "\xFF\xD8\xFF", 3)) return "JPEG";
  if (starts_with(bytes, 0, "\x89PNG\r\n\x1a\n", 8)) return "PNG";
  if (starts_with(bytes, 0, "BM", 2)) return "BMP";
  if (starts_with(bytes, 0, "II*\0", 4) || starts_with(bytes, 0, "MM\0*", 4)) return "TIFF";
  if (starts_with(bytes, 0, "RIFF", 4) && starts_with(bytes, 8, "WEBP", 4)) return "WebP";
  if (starts_with(bytes, 0, "\0\0\0\x0cjP  \r\n\x87\n", 12) ||
      starts_with(bytes, 0, "\xFF\x4F\xFF\x51", 4)) {
    return "JPEG 2000";
  }
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') return "PNM";
  return std::nullopt;
}

std::optional<ImageSize> encoded_image_size(const std::string& bytes) {
  if (auto size = png_size(bytes)) return size;
  return jpeg_size(bytes);
}

void check_image_header(const std::string& bytes, const std::string& what) {
  XTRAIN_CHECK(encoded_image_format(bytes).has_value(), what,
               " is not an image xtrain decodes: its first bytes are not those of a ",
               kDecodedImageFormats, " file; the file is damaged or of another kind");
  if (const std::optional<ImageSize> size = encoded_image_size(bytes)) {
    const std::uint64_t pixels = std::uint64_t{size->width} * size->height;
    XTRAIN_CHECK(pixels > 0 && pixels <= kMaxDecodedPixels, what, " claims ", size->width, "x",
                 size->height, " pixels in its header, ",
                 pixels == 0 ? "none" : "more than can be decoded (2^30)",
                 ": the file is damaged, or far too large for a training image (resize it)");
  }
}

}  // namespace xtrain

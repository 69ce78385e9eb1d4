// Images to and from bytes, through OpenCV: decoding (JPEG, PNG, BMP, ...),
// resizing and encoding, in Caffe's pixel layout: channels planar (C x H x W),
// colour channels in OpenCV's B, G, R order (what Caffe writes into Datums,
// so databases are interchangeable).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

struct XTRAIN_API Image {
  int channels = 0;
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> pixels;  // channels * height * width, planar
};

enum class ColorMode {
  kAsStored,  // keep the file's own channel count (1 or 3)
  kColor,     // 3 channels (grey images are replicated)
  kGray,      // 1 channel
};

// Decodes compressed image bytes. `what` names the source for errors
// ("record 00000012_cat.jpg of DB 'x'", "'/data/a.png' (list line 17)").
// Throws xtrain::Error if the bytes are not a decodable image.
XTRAIN_API Image decode_image(const std::string& bytes, ColorMode mode, const std::string& what);

// Reads and decodes an image file, then resizes it to height x width when
// both are > 0 (bilinear, as Caffe's cv::resize default). Throws
// xtrain::Error naming the file if it is missing or not an image.
XTRAIN_API Image read_image_file(const std::string& path, ColorMode mode, int resize_height = 0,
                                 int resize_width = 0);

// decode_image, then a resize to resize_height x resize_width when both are
// > 0, done on OpenCV's interleaved image as Caffe does (so pixels match
// Caffe's). Throws if only one of the sizes is > 0.
XTRAIN_API Image decode_and_resize(const std::string& bytes, ColorMode mode, int resize_height,
                                   int resize_width, const std::string& what);

// Resizes (bilinear) to height x width.
XTRAIN_API Image resize_image(const Image& image, int height, int width);

// The whole file. Throws xtrain::Error naming it if it is missing or
// unreadable.
XTRAIN_API std::string read_file_bytes(const std::string& path);

// Whether OpenCV can encode images as `format` ("png", "jpg", ...).
XTRAIN_API bool can_encode_as(const std::string& format);

// Encodes as `format` ("png", "jpg", "bmp", ...; no dot). Throws on failure.
XTRAIN_API std::string encode_image(const Image& image, const std::string& format);

}  // namespace xtrain

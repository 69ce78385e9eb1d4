// OpenCV holds images interleaved (row by row, each pixel's B, G, R together);
// Caffe's Datums and our Image are planar. The conversions here are the only
// place the two layouts meet:
//   planar[c * H * W + h * W + w] = interleaved[(h * W + w) * C + c].
#include "xtrain/image_codec.hpp"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "data/image_header.hpp"
#include "data/imdecode_flags.hpp"
#include "xtrain/error.hpp"
#include "xtrain/input_file.hpp"

namespace xtrain {
namespace {

// The planes of `image` as OpenCV single-channel images over its pixels,
// so cv::split / cv::merge (vectorised) convert between the layouts.
std::vector<cv::Mat> plane_views(Image& image) {
  std::vector<cv::Mat> planes;
  const std::size_t plane = static_cast<std::size_t>(image.height) * image.width;
  for (int c = 0; c < image.channels; ++c) {
    planes.emplace_back(image.height, image.width, CV_8UC1, image.pixels.data() + c * plane);
  }
  return planes;
}

Image image_from_mat(const cv::Mat& mat) {
  XTRAIN_ASSERT(mat.depth() == CV_8U && (mat.channels() == 1 || mat.channels() == 3),
                "decoded image of type ", mat.type());
  Image image;
  image.channels = mat.channels();
  image.height = mat.rows;
  image.width = mat.cols;
  image.pixels.resize(static_cast<std::size_t>(image.channels) * image.height * image.width);
  std::vector<cv::Mat> planes = plane_views(image);
  if (image.channels == 1) {
    mat.copyTo(planes[0]);
  } else {
    cv::split(mat, planes.data());
  }
  return image;
}

cv::Mat mat_from_image(const Image& image) {
  XTRAIN_CHECK(image.channels == 1 || image.channels == 3, "cannot make an OpenCV image of ",
               image.channels, " channels (1 or 3 needed)");
  XTRAIN_CHECK(image.height > 0 && image.width > 0, "cannot use an empty image (", image.height,
               "x", image.width, ")");
  const std::size_t plane = static_cast<std::size_t>(image.height) * image.width;
  XTRAIN_ASSERT(image.pixels.size() == plane * image.channels, "image of ", image.channels, "x",
                image.height, "x", image.width, " holds ", image.pixels.size(), " pixels");
  // The views only read the pixels; OpenCV's headers are not const-aware.
  std::vector<cv::Mat> planes = plane_views(const_cast<Image&>(image));
  if (image.channels == 1) return planes[0].clone();
  cv::Mat mat;
  cv::merge(planes, mat);
  return mat;
}

cv::Mat decode_to_mat(const std::string& bytes, ColorMode mode, const std::string& what) {
  XTRAIN_CHECK(!bytes.empty(), what, " is empty, not an image");
  XTRAIN_CHECK(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()), what,
               " is too large (", bytes.size(), " bytes) to decode");
  check_image_header(bytes, what);
  const cv::Mat encoded(1, static_cast<int>(bytes.size()), CV_8UC1,
                        const_cast<char*>(bytes.data()));
  cv::Mat decoded;
  try {
    decoded = cv::imdecode(encoded, imdecode_flags(mode));
  } catch (const cv::Exception& error) {
    // error.err is OpenCV's message without its source location.
    XTRAIN_CHECK(false, what, " could not be decoded (OpenCV: ", error.err,
                 "); the file is damaged or not an image");
  }
  XTRAIN_CHECK(!decoded.empty(), what,
               " is not an image OpenCV can decode (JPEG, PNG, BMP, TIFF, ...); the file is "
               "damaged or not an image");
  return decoded;
}

cv::Mat resize_mat(const cv::Mat& mat, int height, int width) {
  XTRAIN_CHECK(height > 0 && width > 0, "cannot resize an image to ", height, "x", width,
               "; both sizes must be positive");
  // The limit of decoding (kMaxDecodedPixels) holds for resizing too: past it
  // OpenCV fails to allocate (or the machine runs out of memory) instead.
  XTRAIN_CHECK(
      static_cast<std::uint64_t>(height) * static_cast<std::uint64_t>(width) <= kMaxDecodedPixels,
      "cannot resize an image to ", height, "x", width,
      ": more pixels than an image xtrain decodes (2^30); choose a smaller size");
  if (mat.rows == height && mat.cols == width) return mat;
  cv::Mat resized;
  cv::resize(mat, resized, cv::Size(width, height), 0, 0, cv::INTER_LINEAR);
  return resized;
}

}  // namespace

Image decode_image(const std::string& bytes, ColorMode mode, const std::string& what) {
  return image_from_mat(decode_to_mat(bytes, mode, what));
}

std::string read_file_bytes(const std::string& path) { return read_input_file(path, ""); }

Image decode_and_resize(const std::string& bytes, ColorMode mode, int resize_height,
                        int resize_width, const std::string& what) {
  XTRAIN_CHECK((resize_height > 0) == (resize_width > 0), "resize to ", resize_height, "x",
               resize_width, " for ", what,
               ": give both height and width (> 0) to resize, or neither");
  cv::Mat mat = decode_to_mat(bytes, mode, what);
  if (resize_height > 0) mat = resize_mat(mat, resize_height, resize_width);
  return image_from_mat(mat);
}

Image read_image_file(const std::string& path, ColorMode mode, int resize_height,
                      int resize_width) {
  return decode_and_resize(read_file_bytes(path), mode, resize_height, resize_width,
                           "'" + path + "'");
}

Image resize_image(const Image& image, int height, int width) {
  return image_from_mat(resize_mat(mat_from_image(image), height, width));
}

bool can_encode_as(const std::string& format) {
  if (format.empty()) return false;
  try {
    return cv::haveImageWriter(format.front() == '.' ? format : "." + format);
  } catch (const cv::Exception&) {
    return false;
  }
}

std::string encode_image(const Image& image, const std::string& format) {
  XTRAIN_CHECK(can_encode_as(format), "cannot encode images as '", format,
               "': OpenCV has no encoder for it (try png or jpg)");
  const std::string extension = format.front() == '.' ? format : "." + format;
  std::vector<std::uint8_t> buffer;
  bool encoded = false;
  try {
    encoded = cv::imencode(extension, mat_from_image(image), buffer);
  } catch (const cv::Exception& error) {
    XTRAIN_CHECK(false, "encoding an image of ", image.channels, "x", image.height, "x",
                 image.width, " as '", format, "' failed: ", error.what());
  }
  XTRAIN_CHECK(encoded, "encoding an image of ", image.channels, "x", image.height, "x",
               image.width, " as '", format, "' failed");
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace xtrain

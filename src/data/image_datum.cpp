#include "xtrain/image_datum.hpp"

#include <algorithm>
#include <cctype>

#include "xtrain/error.hpp"

namespace xtrain {

std::string file_extension(const std::string& path) {
  const std::size_t name_start = path.find_last_of('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (name_start != std::string::npos && dot < name_start)) return "";
  std::string extension = path.substr(dot + 1);
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

bool file_has_format(const std::string& path, const std::string& format) {
  std::string wanted = format;
  std::transform(wanted.begin(), wanted.end(), wanted.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!wanted.empty() && wanted.front() == '.') wanted.erase(0, 1);
  const std::string extension = file_extension(path);
  return extension == wanted || (wanted == "jpg" && extension == "jpeg");
}

Datum image_to_datum(const Image& image, int label) {
  return make_datum(DatumShape{image.channels, image.height, image.width}, image.pixels.data(),
                    label);
}

ImageDatum image_bytes_to_datum(const std::string& bytes, const std::string& path, int label,
                                const ImageDatumOptions& options, const std::string& what) {
  const Image image =
      decode_and_resize(bytes, options.color, options.resize_height, options.resize_width, what);
  ImageDatum result;
  result.shape = DatumShape{image.channels, image.height, image.width};
  if (!options.encoded) {
    result.datum = image_to_datum(image, label);
    return result;
  }
  const bool resized = options.resize_height > 0;
  if (!resized && (options.encode_type.empty() || file_has_format(path, options.encode_type))) {
    result.datum.set_data(bytes);
  } else {
    const std::string format =
        options.encode_type.empty() ? file_extension(path) : options.encode_type;
    XTRAIN_CHECK(!format.empty(), "cannot tell which format to encode ", what,
                 " in: its name has no extension; pass --encode_type (png, jpg, ...)");
    result.datum.set_data(encode_image(image, format));
  }
  result.datum.set_label(label);
  result.datum.set_encoded(true);
  return result;
}

ImageDatum read_image_to_datum(const std::string& path, int label,
                               const ImageDatumOptions& options) {
  return image_bytes_to_datum(read_file_bytes(path), path, label, options, "'" + path + "'");
}

Image datum_to_image(const Datum& datum, ColorMode mode, const std::string& what) {
  if (datum.encoded()) return decode_image(datum.data(), mode, what);
  XTRAIN_CHECK(!datum.data().empty() || datum.float_data_size() == 0, what,
               " holds float_data, not 8-bit pixels");
  const DatumShape shape = datum_shape(datum);
  XTRAIN_CHECK(shape.channels > 0 && shape.height > 0 && shape.width > 0, what, " has shape ",
               shape.to_string(), "; every dimension must be positive");
  XTRAIN_CHECK(datum.data().size() == shape.count(), what, " has shape ", shape.to_string(), " (",
               shape.count(), " pixels) but holds ", datum.data().size(), " bytes of pixels");
  const int wanted_channels = mode == ColorMode::kColor ? 3 : mode == ColorMode::kGray ? 1 : 0;
  XTRAIN_CHECK(wanted_channels == 0 || wanted_channels == shape.channels, what, " holds ",
               shape.channels, "-channel pixels (not encoded), but ", wanted_channels,
               " channels were asked for; unencoded records cannot change colour");
  Image image;
  image.channels = shape.channels;
  image.height = shape.height;
  image.width = shape.width;
  image.pixels.assign(datum.data().begin(), datum.data().end());
  return image;
}

}  // namespace xtrain

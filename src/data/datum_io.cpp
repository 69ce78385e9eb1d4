#include "xtrain/datum_io.hpp"

#include <limits>

#include "xtrain/error.hpp"

namespace xtrain {

std::string DatumShape::to_string() const {
  return std::to_string(channels) + "x" + std::to_string(height) + "x" + std::to_string(width);
}

std::string describe_record(std::string_view key, const std::string& source) {
  return "record '" + std::string(key) + "' of LMDB '" + source + "'";
}

void parse_datum(std::string_view bytes, std::string_view key, const std::string& source,
                 Datum* datum) {
  XTRAIN_CHECK(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                   datum->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
               describe_record(key, source), " is not a valid Datum (", bytes.size(),
               " bytes); the database is corrupt or was not written by a Caffe converter");
  check_datum(*datum, key, source);
}

DatumShape datum_shape(const Datum& datum) {
  return DatumShape{datum.channels(), datum.height(), datum.width()};
}

void check_datum(const Datum& datum, std::string_view key, const std::string& source) {
  if (datum.encoded()) {
    XTRAIN_CHECK(!datum.data().empty(), describe_record(key, source),
                 " is an encoded Datum without image bytes; the database is damaged");
    return;
  }
  const DatumShape shape = datum_shape(datum);
  XTRAIN_CHECK(shape.channels > 0 && shape.height > 0 && shape.width > 0,
               describe_record(key, source), " has shape ", shape.to_string(),
               "; every dimension must be positive");
  const std::size_t bytes = datum.data().size();
  const std::size_t floats = static_cast<std::size_t>(datum.float_data_size());
  if (bytes > 0) {
    XTRAIN_CHECK(bytes == shape.count(), describe_record(key, source), " has shape ",
                 shape.to_string(), " (", shape.count(), " pixels) but holds ", bytes,
                 " bytes of pixels");
  } else {
    XTRAIN_CHECK(floats == shape.count(), describe_record(key, source), " has shape ",
                 shape.to_string(), " (", shape.count(), " values) but holds ", floats,
                 " float_data values");
  }
}

void datum_to_floats(const Datum& datum, float* out) {
  const std::size_t count = datum_shape(datum).count();
  if (!datum.data().empty()) {
    const auto* pixels = reinterpret_cast<const unsigned char*>(datum.data().data());
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(pixels[i]);
  } else {
    for (std::size_t i = 0; i < count; ++i) out[i] = datum.float_data(static_cast<int>(i));
  }
}

Datum make_datum(const DatumShape& shape, const unsigned char* pixels, int label) {
  Datum datum;
  datum.set_channels(shape.channels);
  datum.set_height(shape.height);
  datum.set_width(shape.width);
  datum.set_data(pixels, shape.count());
  datum.set_label(label);
  return datum;
}

}  // namespace xtrain

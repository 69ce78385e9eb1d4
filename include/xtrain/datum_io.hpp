// Datum records (Caffe's LMDB value format) and their pixels as floats.
//
// A Datum holds a channels x height x width image either as uint8 bytes in
// `data` (what convert_mnist_data and convert_imageset write) or as floats in
// `float_data`. An encoded Datum (`encoded: true`) holds a compressed image
// (JPEG, PNG, ...) in `data` and, as Caffe writes it, no channels/height/
// width: its shape is known only once decoded (DataTransformer::pixels_of).
#pragma once

#include <string>
#include <string_view>

#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

struct XTRAIN_API DatumShape {
  int channels = 0;
  int height = 0;
  int width = 0;

  std::size_t count() const { return static_cast<std::size_t>(channels) * height * width; }
  bool operator==(const DatumShape& other) const {
    return channels == other.channels && height == other.height && width == other.width;
  }
  bool operator!=(const DatumShape& other) const { return !(*this == other); }
  // "1x28x28"
  std::string to_string() const;
};

// "record '00000042' of LMDB 'examples/mnist/train_lmdb'": the place named
// in errors about one record.
XTRAIN_API std::string describe_record(std::string_view key, const std::string& source);

// Parses the record `key` of database `source` into `datum` and checks it
// (see check_datum). Errors name the record; the name is built only then,
// so the per-record cost is just the parse.
XTRAIN_API void parse_datum(std::string_view bytes, std::string_view key, const std::string& source,
                            Datum* datum);

// Throws xtrain::Error naming the record if the Datum is encoded but empty,
// or unencoded with a non-positive dimension or a number of values other
// than C*H*W.
XTRAIN_API void check_datum(const Datum& datum, std::string_view key, const std::string& source);

// The stored channels x height x width (all 0 for an encoded Datum).
XTRAIN_API DatumShape datum_shape(const Datum& datum);

// The C*H*W values of a checked, unencoded Datum, in C, H, W order.
XTRAIN_API void datum_to_floats(const Datum& datum, float* out);

// An unencoded uint8 Datum, as Caffe's converters write it.
XTRAIN_API Datum make_datum(const DatumShape& shape, const unsigned char* pixels, int label);

}  // namespace xtrain

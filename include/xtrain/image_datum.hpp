// Image files to Datum records and back, with the semantics of Caffe's
// ReadImageToDatum / DecodeDatum so the databases are interchangeable.
//
// Unencoded: the decoded (and resized) pixels, planar in B, G, R order
// (grey: 1 channel), with channels/height/width set.
// Encoded (`encoded: true`, compressed bytes in `data`; channels, height and
// width are left unset, as Caffe leaves them):
//   - no resize, and the target format is the file's own (`encode_type`
//     empty, or equal to the extension; "jpg" also matches ".jpeg"): the
//     FILE'S BYTES, unchanged (the image is still decoded once, to check it
//     and to learn its size);
//   - otherwise the decoded, resized image encoded as `encode_type`, or as
//     the file's extension when `encode_type` is empty.
// Like Caffe, an encoded copy of the file keeps the file's colours even with
// --gray: the reader decides on colour when it decodes.
#pragma once

#include <string>

#include "xtrain/datum_io.hpp"
#include "xtrain/export.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

struct XTRAIN_API ImageDatumOptions {
  ColorMode color = ColorMode::kColor;  // kColor (3 channels) or kGray (1)
  int resize_height = 0;                // both > 0 to resize, else neither
  int resize_width = 0;
  bool encoded = false;
  std::string encode_type;  // "png", "jpg", ...; empty: the file's extension
};

struct XTRAIN_API ImageDatum {
  Datum datum;
  DatumShape shape;  // of the decoded (resized) image, also for encoded Datums
};

// Decodes `bytes` (the contents of the file `path`) into a Datum labelled
// `label`. `what` names the image in errors ("'a.jpg' (list line 3)").
// Throws xtrain::Error if the bytes are not an image, or the format to
// encode to cannot be told or is unknown.
XTRAIN_API ImageDatum image_bytes_to_datum(const std::string& bytes, const std::string& path,
                                           int label, const ImageDatumOptions& options,
                                           const std::string& what);

// Reads the file, then as image_bytes_to_datum.
XTRAIN_API ImageDatum read_image_to_datum(const std::string& path, int label,
                                          const ImageDatumOptions& options);

// An unencoded Datum of the image's pixels.
XTRAIN_API Datum image_to_datum(const Image& image, int label);

// The pixels of a Datum holding uint8 data: encoded ones decoded with `mode`,
// unencoded ones copied (`mode` must then be kAsStored, or match the
// Datum's channels). Throws naming `what` for float_data Datums, sizes that
// do not match C*H*W, or undecodable bytes.
XTRAIN_API Image datum_to_image(const Datum& datum, ColorMode mode, const std::string& what);

// The extension of `path` after its last '.', lower-cased ("" if none).
XTRAIN_API std::string file_extension(const std::string& path);

// Whether `path` has the extension `format` (case-insensitive; "jpg" also
// matches "jpeg"), as Caffe decides whether a file can be stored as is.
XTRAIN_API bool file_has_format(const std::string& path, const std::string& format);

}  // namespace xtrain

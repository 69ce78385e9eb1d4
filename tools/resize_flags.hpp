// The converters' --resize_width / --resize_height: both or neither, and
// no larger than a record can be (convert_imageset, convert_annoset).
#pragma once

#include <climits>

#include "xtrain/error.hpp"

namespace xtrain::tools {

inline void check_resize_flags(int width, int height, int channels) {
  XTRAIN_CHECK(width >= 0 && height >= 0 && (width > 0) == (height > 0), "--resize_width=", width,
               " --resize_height=", height, ": give both (> 0) to resize, or neither");
  // A Datum of the pixels is a protobuf message: at most 2 GB.
  const long long bytes = static_cast<long long>(width) * height * channels;
  XTRAIN_CHECK(bytes < INT_MAX, "--resize_width=", width, " --resize_height=", height,
               ": a record of ", width, " x ", height, " x ", channels, " = ", bytes,
               " bytes is more than the 2 GB a Datum can hold; resize to fewer pixels");
}

}  // namespace xtrain::tools

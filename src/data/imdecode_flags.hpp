// The OpenCV flags each ColorMode decodes with: force_color and force_gray
// as Caffe's DecodeDatumToCVMat, "as stored" as its DecodeDatumToCVMatNative
// (1 or 3 channels of 8 bits: alpha dropped, 16-bit samples scaled down).
// One definition for every decoder: image files (image_codec.cpp), datums
// (the data transformer) and annotated images.
#pragma once

#include <opencv2/imgcodecs.hpp>

#include "xtrain/error.hpp"
#include "xtrain/image_codec.hpp"

namespace xtrain {

inline int imdecode_flags(ColorMode mode) {
  switch (mode) {
    case ColorMode::kColor:
      return cv::IMREAD_COLOR;
    case ColorMode::kGray:
      return cv::IMREAD_GRAYSCALE;
    case ColorMode::kAsStored:
      return cv::IMREAD_ANYCOLOR;
  }
  XTRAIN_ASSERT(false, "unknown ColorMode");
}

}  // namespace xtrain

// Mean files: a BlobProto (Caffe's .binaryproto, as compute_image_mean
// writes it) holding the per-pixel mean image, shape (1, C, H, W) in the
// legacy num/channels/height/width fields or in `shape`.
#pragma once

#include <string>
#include <vector>

#include "xtrain/datum_io.hpp"

namespace xtrain {

struct MeanImage {
  std::string path;
  std::vector<int> shape;     // as stored
  std::vector<float> values;  // C*H*W, in C, H, W order

  // Throws xtrain::Error naming the file and both shapes unless this mean is
  // (1, C, H, W) for the image shape C x H x W (before cropping).
  void check_matches(const DatumShape& image) const;
  // Throws unless this mean is (1, channels, H, W) with H and W at least
  // `crop`: for images of any size, whose crop subtracts the mean's centre.
  void check_covers(int channels, int crop) const;
};

// Throws xtrain::Error naming the file if it is missing, not a BlobProto, or
// holds a number of values other than its shape says.
MeanImage read_mean_file(const std::string& path);

}  // namespace xtrain

// The per-pixel mean of many images of one shape C x H x W:
//   mean[i] = (1 / N) * sum over images n of pixel_n[i],  i < C*H*W,
// summed in double (exact for up to 2^53 / 255 uint8 images, so the result
// does not depend on the order of the sum or on how it was split between
// threads), and the per-channel means Caffe's compute_image_mean prints:
//   channel_mean[c] = (1 / (H*W)) * sum over h, w of mean[c*H*W + h*W + w].
// Threads each fill an accumulator and merge() them at the end.
//
// uint8 images are first summed in uint32 (half the memory traffic of
// double, and vectorised), folded into the double sums before a uint32 could
// overflow (every 2^32 / 255 images); results add both sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "xtrain/datum_io.hpp"
#include "xtrain/export.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

class XTRAIN_API MeanAccumulator {
 public:
  explicit MeanAccumulator(const DatumShape& shape);

  const DatumShape& shape() const { return shape_; }
  std::size_t count() const { return count_; }

  // One image of shape().count() values, planar C, H, W.
  void add(const std::uint8_t* pixels);
  void add(const float* values);
  // Adds another accumulator's sums (same shape, else xtrain::Error).
  void merge(const MeanAccumulator& other);

  // mean[i] as above. Throws xtrain::Error if no image was added.
  std::vector<float> mean() const;
  std::vector<double> channel_means() const;

  // The mean as Caffe 1.0's compute_image_mean writes it: float `data`, and
  // the shape in the legacy num/channels/height/width fields (1, C, H, W),
  // which every Caffe version reads.
  BlobProto to_blob_proto() const;

 private:
  // Adds the uint32 partial sums into sums_ and clears them.
  void fold_pixel_sums();
  // sums_[i] plus the pending uint32 sum of pixel i.
  double total(std::size_t i) const {
    return pixel_sums_.empty() ? sums_[i] : sums_[i] + pixel_sums_[i];
  }

  DatumShape shape_;
  std::vector<double> sums_;
  std::vector<std::uint32_t> pixel_sums_;  // empty until a uint8 image is added
  std::size_t images_in_pixel_sums_ = 0;
  std::size_t count_ = 0;
};

}  // namespace xtrain

// DataTransformer: Caffe's TransformationParameter applied to one Datum.
//
// For an input image x of shape C x H x W and crop size K (0: no crop, then
// K = H for rows and W for columns), the output y of shape C x K x K is
//
//   y[c][h][w] = (x[c][h_off + h][w_off + w'] - mean[c][h_off + h][w_off + w']) * scale
//
// where w' = w, or K - 1 - w when the image is mirrored, and mean is the mean
// file's image (indexed in the full, uncropped image), or mean_value[c] (one
// value for every channel, or one per channel), or 0.
//
// Offsets and mirroring, in the order the random numbers are drawn:
//   both phases: mirror = mirror_param && rand() % 2;
//   TRAIN: h_off = rand() % (H - K + 1), w_off = rand() % (W - K + 1)
//   TEST:  h_off = (H - K) / 2, w_off = (W - K) / 2
// rand() is one 32-bit draw from the RandomStream passed to transform().
// As in Caffe 1.0, `mirror: true` flips at random in the TEST phase too
// (nets meant for deterministic scoring set mirror: false for TEST).
#pragma once

#include <string>
#include <vector>

#include "data/datum_io.hpp"
#include "data/mean_file.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/random.hpp"

namespace xtrain {

class DataTransformer {
 public:
  // `owner` prefixes every error, e.g. "layer 'mnist' (Data)". Reads the mean
  // file, if any.
  DataTransformer(const TransformationParameter& param, Phase phase, std::string owner);

  // Throws xtrain::Error unless images of `input` shape can be transformed:
  // the crop fits, mean_value has 1 or C values, the mean file is (1, C, H, W).
  void check_input_shape(const DatumShape& input) const;
  // C x K x K with K = crop_size, or the input shape without crop.
  DatumShape output_shape(const DatumShape& input) const;

  // Writes output_shape(datum).count() values to `out`. The Datum must have
  // passed check_datum() and have a shape accepted by check_input_shape().
  void transform(const Datum& datum, RandomStream& random, float* out) const;

  const TransformationParameter& param() const { return param_; }

 private:
  template <typename Value>
  void transform_values(const Value* values, const DatumShape& input, RandomStream& random,
                        float* out) const;

  TransformationParameter param_;
  Phase phase_;
  std::string owner_;
  bool has_mean_file_ = false;
  MeanImage mean_image_;
};

}  // namespace xtrain

// Darknet's .weights files.
//
// The format (Darknet's parser.c, little-endian as x86 and ARM store it): a
// header of int32 major, minor, revision and the images seen in training,
// a uint64 when major * 10 + minor >= 2 (and both < 1000), else an int32;
// then, for each [convolutional] section in cfg order, float32 values:
//   biases [filters]                    (BN's shift when batch_normalize)
//   scales, rolling_mean, rolling_variance [filters each]   (batch_normalize only)
//   weights [filters x channels/groups x size x size]       (Caffe's order too)
// Nothing names the layers: a file fits a cfg only by its length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interchange/darknet_model.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::interchange {

// The blobs of `model`'s convolutions from the .weights at `path`, as a
// .caffemodel's layers: Convolution (weights, and bias without BN), BatchNorm
// (mean, variance, factor 1), Scale (scales, biases). Throws xtrain::Error
// when the file holds more or fewer floats than the cfg's layers take,
// naming the layer where they part; with `allow_partial`, a file that ends
// between two layers loads those before and says so in `notes`.
NetParameter read_darknet_weights(const DarknetModel& model, const std::string& path,
                                  bool allow_partial, std::vector<std::string>* notes);

// A .weights file's bytes for `weights` (layers by name, as a .caffemodel
// has them; `weights_source` names it in errors).
std::string darknet_weights_bytes(const DarknetModel& model, const NetParameter& weights,
                                  const std::string& weights_source, std::uint64_t images_seen);

}  // namespace xtrain::interchange

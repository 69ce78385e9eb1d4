// What Classifier and Detector both take: how an image file becomes the
// values of the net's input, where the net runs, and whether weights that
// leave learnable layers at their initial values are accepted.
//
//   input[c][h][w] = (pixel[c][h][w] - mean[c][h][w]) * scale
//
// (xtrain/classifier.hpp and xtrain/detector.hpp say how each fits the
// image to the input's height x width.)
#pragma once

#include <string>
#include <vector>

#include "xtrain/device.hpp"
#include "xtrain/export.hpp"

namespace xtrain {

struct XTRAIN_API ImageInputOptions {
  // A mean image (Caffe's .binaryproto, from compute_mean) of shape
  // 1 x C x H x W, the net's input shape. Empty: none.
  std::string mean_file;
  // Per-channel means instead (one value for every channel, or one per
  // channel, B, G, R for colour). Not together with mean_file.
  std::vector<float> mean_values;
  // Multiplies each pixel after the mean is subtracted.
  float scale = 1;
  Device device = Device::cpu();
  // Run even when the weights leave learnable layers at their random
  // initial values (else that is an error naming them).
  bool allow_missing_weights = false;
};

}  // namespace xtrain

// ClassifierInput: image files -> the float values a classifier net reads,
//   input[c][h][w] = (pixel[c][h][w] - mean[c][h][w]) * scale
// after the image is converted to the net's channels (1: grey, 3: B, G, R)
// and resized to its height x width (see xtrain/classifier.hpp).
#pragma once

#include <string>
#include <vector>

#include "xtrain/classifier.hpp"

namespace xtrain {

class ClassifierInput {
 public:
  // The net's image shape (channels must be 1 or 3). Throws xtrain::Error
  // naming the mean file, or the mean values, if they do not fit it.
  ClassifierInput(int channels, int height, int width, const ClassifierOptions& options);

  // Writes the channels * height * width values of the image file at `path`
  // to `out`. Throws xtrain::Error naming the file if it is missing or not
  // an image.
  void fill(const std::string& path, float* out) const;

  std::size_t count() const { return mean_.size(); }

 private:
  int channels_;
  int height_;
  int width_;
  float scale_;
  std::vector<float> mean_;  // channels * height * width, planar; zeros without a mean
};

}  // namespace xtrain

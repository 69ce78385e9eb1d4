// ClassifierInput: image files -> the float values a classifier net reads,
//   input[c][h][w] = (pixel[c][h][w] - mean[c][h][w]) * scale
// after the image is converted to the net's channels (1: grey, 3: B, G, R)
// and resized to its height x width (see xtrain/classifier.hpp).
#pragma once

#include <string>
#include <vector>

#include "xtrain/image_codec.hpp"
#include "xtrain/image_input_options.hpp"

namespace xtrain {

class ClassifierInput {
 public:
  // The net's image shape (channels must be 1 or 3). Throws xtrain::Error
  // naming the mean file, or the mean values, if they do not fit it.
  ClassifierInput(int channels, int height, int width, const ImageInputOptions& options);

  // Writes the channels * height * width values of the image file at `path`
  // to `out`. Throws xtrain::Error naming the file if it is missing or not
  // an image.
  void fill(const std::string& path, float* out) const;

  // The image file at `path` at its own size, in the net's channels.
  Image read(const std::string& path) const;

  // Writes the values of `image`, resized to the net's height x width
  // (stretched), to `out`.
  void fill(const Image& image, float* out) const;

  // Writes the values of `image` letterboxed into the net's height x width
  // (data/letterbox.hpp): scaled to fit, keeping its aspect ratio, centred,
  // the rest `pad_value` (a pixel value, before mean and scale).
  void fill_letterboxed(const Image& image, float pad_value, float* out) const;

  std::size_t count() const { return mean_.size(); }

 private:
  // (pixel - mean) * scale of an image of the net's size.
  void write(const Image& image, float* out) const;

  int channels_;
  int height_;
  int width_;
  float scale_;
  std::vector<float> mean_;  // channels * height * width, planar; zeros without a mean
};

}  // namespace xtrain

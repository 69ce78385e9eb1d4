#include "inference/classifier_input.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "data/letterbox.hpp"
#include "data/mean_file.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/image_codec.hpp"

namespace xtrain {
namespace {

// "104.0,116.7,122.7": a mean file's per-channel averages, which fit an
// input of any size (what Caffe's classification example subtracts).
std::string channel_averages(const MeanImage& mean, int channels) {
  const std::size_t plane = mean.values.size() / static_cast<std::size_t>(channels);
  std::ostringstream text;
  for (int c = 0; c < channels; ++c) {
    double sum = 0;
    for (std::size_t i = 0; i < plane; ++i) sum += mean.values[c * plane + i];
    text << (c > 0 ? "," : "") << (plane > 0 ? sum / static_cast<double>(plane) : 0.0);
  }
  return text.str();
}

}  // namespace

ClassifierInput::ClassifierInput(int channels, int height, int width,
                                 const ImageInputOptions& options)
    : channels_(channels), height_(height), width_(width), scale_(options.scale) {
  XTRAIN_CHECK(channels == 1 || channels == 3, "the net's input has ", channels,
               " channels; a classifier reads grey (1) or colour (3) images");
  // A scale of inf or nan (a float holds no 1e39) turns every score nan.
  XTRAIN_CHECK(std::isfinite(options.scale), "the scale ", options.scale,
               " is not a finite number; give the training's transform_param scale, e.g. "
               "0.00390625 (1/256), or 1");
  for (float value : options.mean_values) {
    XTRAIN_CHECK(std::isfinite(value), "the mean value ", value, " is not a finite number");
  }
  const std::size_t plane = static_cast<std::size_t>(height) * width;
  mean_.assign(plane * channels, 0.0f);
  XTRAIN_CHECK(options.mean_file.empty() || options.mean_values.empty(),
               "give a mean file or mean values, not both (mean file '", options.mean_file, "')");
  if (!options.mean_file.empty()) {
    const MeanImage mean = read_mean_file(options.mean_file);
    const std::vector<int> expected = {1, channels, height, width};
    if (mean.shape != expected) {
      const bool same_channels = mean.shape.size() == 4 && mean.shape[1] == channels;
      XTRAIN_CHECK(false, "mean file '", options.mean_file, "' has shape ",
                   shape_to_string(mean.shape), ", but the net's input is ", channels, "x", height,
                   "x", width, ", so the mean must be ", shape_to_string(expected),
                   same_channels ? "; or subtract its per-channel means instead: mean values " +
                                       channel_averages(mean, channels)
                                 : "");
    }
    mean_ = mean.values;
  }
  if (!options.mean_values.empty()) {
    const std::size_t given = options.mean_values.size();
    XTRAIN_CHECK(given == 1 || given == static_cast<std::size_t>(channels), "give 1 mean value ",
                 "or one per channel (", channels, "), not ", given);
    for (int c = 0; c < channels; ++c) {
      const float value = options.mean_values[given == 1 ? 0 : c];
      std::fill(mean_.begin() + c * plane, mean_.begin() + (c + 1) * plane, value);
    }
  }
}

void ClassifierInput::fill(const std::string& path, float* out) const {
  write(
      read_image_file(path, channels_ == 1 ? ColorMode::kGray : ColorMode::kColor, height_, width_),
      out);
}

Image ClassifierInput::read(const std::string& path) const {
  return read_image_file(path, channels_ == 1 ? ColorMode::kGray : ColorMode::kColor);
}

void ClassifierInput::fill(const Image& image, float* out) const {
  write(resize_image(image, height_, width_), out);
}

void ClassifierInput::write(const Image& image, float* out) const {
  XTRAIN_ASSERT(image.pixels.size() == mean_.size(), "image of ", image.channels, "x", image.height,
                "x", image.width);
  for (std::size_t i = 0; i < mean_.size(); ++i) {
    out[i] = (static_cast<float>(image.pixels[i]) - mean_[i]) * scale_;
  }
}

void ClassifierInput::fill_letterboxed(const Image& image, float pad_value, float* out) const {
  XTRAIN_ASSERT(image.channels == channels_, "image of ", image.channels, " channels");
  const LetterboxPlacement placed = letterbox_placement(image.width, image.height, width_, height_);
  const Image fitted = resize_image(image, placed.height, placed.width);
  for (std::size_t i = 0; i < mean_.size(); ++i) out[i] = (pad_value - mean_[i]) * scale_;
  for (int c = 0; c < channels_; ++c) {
    for (int y = 0; y < placed.height; ++y) {
      for (int x = 0; x < placed.width; ++x) {
        const std::size_t to =
            (static_cast<std::size_t>(c) * height_ + placed.top + y) * width_ + placed.left + x;
        const std::size_t from =
            (static_cast<std::size_t>(c) * placed.height + y) * placed.width + x;
        out[to] = (static_cast<float>(fitted.pixels[from]) - mean_[to]) * scale_;
      }
    }
  }
}

}  // namespace xtrain

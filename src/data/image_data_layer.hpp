// ImageDataLayer (type "ImageData"): batches of image files named in a list.
//
// image_data_param.source is a text file with one "PATH LABEL" a line, split
// at the last space (see image_list.hpp; malformed lines are reported and
// left out, blank lines skipped). Each image is root_folder + PATH (plain
// concatenation, as in Caffe: end root_folder with '/'), decoded as 3
// channels (B, G, R) with is_color (the default) or 1 without, resized to
// new_height x new_width (bilinear) when both are set, then transformed by
// transform_param.
//
// Tops: data (batch_size, C, H', W'), with the first list image's shape
// after resizing and cropping; label (batch_size). Every image must have the
// first one's shape (resizing makes sure of it); with a crop_size and no
// mean file, larger images are cropped where they are, as in Caffe.
//
// Order: the list's order, wrapping after the last line; with shuffle, a
// permutation drawn from the layer's random stream at the first forward and
// redrawn at every wrap (each epoch), so a seed gives the same order. Then
// rand_skip: the first skip = rand() % rand_skip images are skipped once
// (modulo the list's length).
//
// Prefetching, decode threads and the data wait are PrefetchingDataLayer's
// (data_param.prefetch and data_param.decode_threads apply, as Caffe takes
// its prefetch from data_param for every prefetching layer). An image that
// is missing or not an image fails the forward that needs it, naming the
// list line and the path.
#pragma once

#include <string>
#include <vector>

#include "data/prefetching_data_layer.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/image_list.hpp"

namespace xtrain {

class ImageDataLayer : public PrefetchingDataLayer {
 public:
  explicit ImageDataLayer(const LayerParameter& param) : PrefetchingDataLayer(param) {}
  ~ImageDataLayer() override;

  void layer_setup(const BlobVec& bottom, const BlobVec& top) override;
  const char* type() const override { return "ImageData"; }

 protected:
  void start_reading() override;
  void read_record(Record& record) override;
  void decode_record(const Record& record, Worker& worker, float* data,
                     float* label) const override;

 private:
  void check_parameters() const;
  // Reads and resizes one image; errors name the list line.
  Image read_image(const std::string& path, int line) const;
  void shuffle_entries();

  ImageList list_;  // entries in reading order; the reader thread's once it runs
  std::string root_folder_;
  ColorMode color_mode_ = ColorMode::kColor;
  int new_height_ = 0;
  int new_width_ = 0;
  DatumShape image_shape_;  // of the first image, resized
  std::size_t position_ = 0;
  RandomStream shuffle_random_;
};

}  // namespace xtrain

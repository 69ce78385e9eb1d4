// What the data-parallel tests share: a small LMDB of 8x8 images, a net
// that exercises everything that must follow the global item rather than the
// replica (crop and mirror per record, Dropout per item), and a comparison
// of trained weights.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "lmdb_fixture.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::testing {

// 8x8 images of 3 classes: the class sets a bright quadrant, noise the rest.
inline void write_images(const std::string& path, int count) {
  std::mt19937 random(5);
  std::vector<FixtureImage> images(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    FixtureImage& image = images[static_cast<std::size_t>(i)];
    image.label = i % 3;
    image.pixels.resize(64);
    for (int p = 0; p < 64; ++p) {
      const bool bright = (p / 8 < 4) == (image.label != 1) && (p % 8 < 4) == (image.label != 2);
      image.pixels[static_cast<std::size_t>(p)] =
          static_cast<unsigned char>((bright ? 160 : 40) + random() % 60);
    }
  }
  write_datum_lmdb(path, 1, 8, 8, images);
}

// Crop and mirror (augmentation per record), Dropout (masks per item), and
// iter_size 2: everything that must follow the global item, not the rank.
inline std::string net_text(const std::string& source, int batch) {
  return "name: 'parallel'\n"
         "layer { name: 'data' type: 'Data' top: 'data' top: 'label'\n"
         "  transform_param { crop_size: 6 mirror: true scale: 0.00390625 }\n"
         "  data_param { source: '" +
         source + "' batch_size: " + std::to_string(batch) +
         " backend: LMDB } }\n"
         "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'\n"
         "  convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: 'xavier' }\n"
         "                      bias_filler { type: 'constant' value: 0.1 } } }\n"
         "layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }\n"
         "layer { name: 'drop' type: 'Dropout' bottom: 'conv' top: 'conv'\n"
         "  dropout_param { dropout_ratio: 0.3 } }\n"
         "layer { name: 'ip' type: 'InnerProduct' bottom: 'conv' top: 'ip'\n"
         "  inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }\n"
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' "
         "}\n";
}

// The largest difference between two models' blobs, relative to each blob's
// largest magnitude.
inline double max_relative_difference(const NetParameter& a, const NetParameter& b) {
  EXPECT_EQ(a.layer_size(), b.layer_size());
  double worst = 0;
  for (int l = 0; l < std::min(a.layer_size(), b.layer_size()); ++l) {
    EXPECT_EQ(a.layer(l).blobs_size(), b.layer(l).blobs_size()) << a.layer(l).name();
    for (int k = 0; k < std::min(a.layer(l).blobs_size(), b.layer(l).blobs_size()); ++k) {
      const BlobProto& x = a.layer(l).blobs(k);
      const BlobProto& y = b.layer(l).blobs(k);
      EXPECT_EQ(x.data_size(), y.data_size()) << a.layer(l).name();
      double scale = 1e-12;
      double difference = 0;
      for (int i = 0; i < std::min(x.data_size(), y.data_size()); ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(y.data(i))));
        difference = std::max(difference, std::fabs(static_cast<double>(x.data(i)) - y.data(i)));
      }
      worst = std::max(worst, difference / scale);
    }
  }
  return worst;
}

}  // namespace xtrain::testing

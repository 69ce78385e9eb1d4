// Test data for detection nets: images in which each true box is a bright
// square, so that a small net can learn to find them.
#pragma once

#include <vector>

#include "layer_test_support.hpp"
#include "xtrain/net.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

// Fills the net's 3-channel `data` blob (S x S images) with faint noise and
// paints each box of `boxes` (AnnotatedData label rows, 8 values each:
// item, label, instance, xmin, ymin, xmax, ymax, difficult): label 1 red,
// any other label grey; sets the `label` blob to the rows.
inline void feed_boxes_as_squares(Net& net, const std::vector<float>& boxes) {
  Blob& data = *net.blob_by_name("data");
  const int size = data.height();
  RandomStream random(5);
  random.uniform(data.count(), 0.0f, 0.2f, data.mutable_cpu_data());
  float* image = data.mutable_cpu_data();
  for (std::size_t row = 0; row * 8 < boxes.size(); ++row) {
    const float* b = &boxes[row * 8];
    const int item = static_cast<int>(b[0]);
    for (int c = 0; c < 3; ++c) {
      for (int y = static_cast<int>(b[4] * size); y < static_cast<int>(b[6] * size); ++y) {
        for (int x = static_cast<int>(b[3] * size); x < static_cast<int>(b[5] * size); ++x) {
          image[((item * 3 + c) * size + y) * size + x] = b[1] == 1 ? (c == 0 ? 1.0f : 0.0f) : 0.8f;
        }
      }
    }
  }
  set_data(*net.blob_by_name("label"), boxes);
}

}  // namespace xtrain::testing

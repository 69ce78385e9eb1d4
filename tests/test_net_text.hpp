// Pieces of the prototxt nets the tests build.
#pragma once

#include <string>
#include <vector>

namespace xtrain::testing {

// A DummyData layer "data" with two tops: data, Gaussian (std 1) values of
// `shape`, and label, one value per item (shape[0]) from the filler
// `label_filler` (e.g. "type: 'uniform' min: 0 max: 4.99").
inline std::string random_data_and_labels(const std::vector<int>& shape,
                                          const std::string& label_filler) {
  std::string dims;
  for (int dim : shape) dims += "dim: " + std::to_string(dim) + " ";
  return "layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'\n"
         "  dummy_data_param { shape { " +
         dims + "} shape { dim: " + std::to_string(shape.at(0)) +
         " }\n"
         "    data_filler { type: 'gaussian' std: 1 } data_filler { " +
         label_filler + " } } }\n";
}

}  // namespace xtrain::testing

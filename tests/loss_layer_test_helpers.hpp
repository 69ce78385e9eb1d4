// Small helpers shared by the loss layer tests: building a layer from
// prototxt text, filling blobs, and the cases of the normalization tests
// (error_message.hpp has the checks of an xtrain::Error's message).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

// A layer named 'loss' of `type` on current_device(); `extra` is spliced into
// its prototxt.
inline std::unique_ptr<Layer> make_loss_layer(const std::string& type,
                                              const std::string& extra = "") {
  LayerParameter param;
  read_proto_from_text_string("name: 'loss' type: '" + type + "' " + extra, &param);
  return create_layer(param);
}

inline void fill_uniform(Blob& blob, float low, float high, std::uint64_t seed) {
  RandomStream random(seed);
  random.uniform(blob.count(), low, high, blob.mutable_cpu_data());
}

inline void fill_values(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), values.size()) << blob.shape_string();
  for (std::size_t j = 0; j < values.size(); ++j) blob.mutable_cpu_data()[j] = values[j];
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A case of a loss's normalization test: its loss_param, the label it
// ignores (one no position has, when it ignores none), and the normalizer
// the loss must divide by, from the number of valid positions.
struct NormalizationCase {
  const char* name;
  std::string loss_param;
  int ignore;
  double (*normalizer)(int valid);
};

inline void PrintTo(const NormalizationCase& c, std::ostream* out) { *out << c.name; }

// The normalizers of VALID (the count of valid positions, at least 1) and
// of NONE.
inline double valid_count(int valid) { return std::max(valid, 1); }
inline double one(int) { return 1; }

}  // namespace xtrain::testing

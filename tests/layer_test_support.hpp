// Helpers for the layer tests of LRN, BatchNorm, Scale/Bias, Eltwise,
// Concat/Slice, Deconvolution and SPP: a layer from prototxt text, random
// fills, and checks on xtrain::Error messages.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

inline LayerParameter layer_param_from(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  return param;
}

inline std::unique_ptr<Layer> make_layer(const std::string& text) {
  return LayerRegistry::global().create(layer_param_from(text));
}

inline void fill_uniform(Blob& blob, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  RandomStream random(seed);
  if (blob.count() > 0) random.uniform(blob.count(), low, high, blob.mutable_cpu_data());
}

inline void set_values(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), values.size()) << blob.shape_string();
  for (std::size_t j = 0; j < values.size(); ++j) blob.mutable_cpu_data()[j] = values[j];
}

inline std::vector<float> values_of(const Blob& blob) {
  return std::vector<float>(blob.cpu_data(), blob.cpu_data() + blob.count());
}

inline std::vector<float> diffs_of(const Blob& blob) {
  return std::vector<float>(blob.cpu_diff(), blob.cpu_diff() + blob.count());
}

// Expects `action` to throw xtrain::Error whose message holds every fragment.
inline void expect_error(const std::function<void()>& action,
                         const std::vector<std::string>& fragments) {
  try {
    action();
    ADD_FAILURE() << "expected xtrain::Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "message lacks '" << fragment << "': " << message;
    }
  }
}

inline void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                            float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

}  // namespace xtrain::testing

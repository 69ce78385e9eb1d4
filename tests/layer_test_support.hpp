// Helpers shared by the layer tests: a layer from a prototxt snippet (on the
// test's current device, see device_test_support.hpp), blobs with
// deterministic contents and element-wise comparisons (checks of the
// messages of xtrain::Error are in error_message.hpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain::testing {

// The phase is always set (a Net would fill it in), so a test states TEST
// explicitly rather than through the text.
inline LayerParameter layer_param_from(const std::string& prototxt, Phase phase = TRAIN) {
  LayerParameter param;
  read_proto_from_text_string(prototxt, &param);
  param.set_phase(phase);
  return param;
}

// make_layer("name: 'p' type: 'Power' power_param { power: 2 }"), on
// current_device().
inline std::unique_ptr<Layer> make_layer(const std::string& prototxt, Phase phase = TRAIN) {
  return create_layer(layer_param_from(prototxt, phase));
}

// Values from U(low, high), the same for the same seed.
inline void fill_uniform(Blob& blob, std::uint64_t seed, float low = -1.0f, float high = 1.0f) {
  RandomStream random(seed);
  if (blob.count() > 0) random.uniform(blob.count(), low, high, blob.mutable_cpu_data());
}

// Like fill_uniform, but every value is at least `gap` away from each of
// `kinks`, so finite differences never straddle a point where the function
// bends (|x| at 0, a ReLU at 0, ...).
inline void fill_away_from(Blob& blob, std::uint64_t seed, float low, float high,
                           std::initializer_list<float> kinks, float gap) {
  fill_uniform(blob, seed, low, high);
  float* data = blob.mutable_cpu_data();
  for (std::size_t i = 0; i < blob.count(); ++i) {
    for (float kink : kinks) {
      if (data[i] > kink - gap && data[i] < kink + gap)
        data[i] = data[i] < kink ? kink - gap : kink + gap;
    }
  }
}

inline void set_data(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), values.size()) << blob.shape_string();
  std::copy(values.begin(), values.end(), blob.mutable_cpu_data());
}

inline void set_diff(Blob& blob, const std::vector<float>& values) {
  ASSERT_EQ(blob.count(), values.size()) << blob.shape_string();
  std::copy(values.begin(), values.end(), blob.mutable_cpu_diff());
}

inline std::vector<float> data_of(const Blob& blob) {
  return std::vector<float>(blob.cpu_data(), blob.cpu_data() + blob.count());
}

inline std::vector<float> diff_of(const Blob& blob) {
  return std::vector<float>(blob.cpu_diff(), blob.cpu_diff() + blob.count());
}

inline void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                            float tolerance) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

// A fixture for a layer with one bottom and one top: make() builds the layer
// `param` describes on an input of `input_shape`, filled from U(-1, 1).
class OneInputLayerTest : public ::testing::Test {
 protected:
  std::unique_ptr<Layer> make(const LayerParameter& param, const std::vector<int>& input_shape) {
    input_.reshape(input_shape);
    fill_uniform(input_, 3);
    auto layer = create_layer(param);
    layer->setup({&input_}, {&output_});
    return layer;
  }

  Blob input_;
  Blob output_;
};

// Expects setting `layer` up on `bottom` and `top` to throw xtrain::Error
// whose message names every one of `parts`.
inline void expect_setup_error(Layer& layer, const BlobVec& bottom, const BlobVec& top,
                               const std::vector<std::string>& parts) {
  expect_error([&] { layer.setup(bottom, top); }, parts);
}

// Runs the layer `prototxt` describes on `input` into a top of its own, then
// another one in place (top == bottom) with the same parameters: both must
// give the same top and, for `top_diff`, the same bottom and parameter
// gradients (a layer whose gradient reads x must have kept it).
inline void expect_in_place_matches_separate(const std::string& prototxt, const Blob& input,
                                             const Blob& top_diff) {
  auto clear_parameter_diffs = [](Layer& layer) {
    for (auto& blob : layer.blobs()) set_diff(*blob, std::vector<float>(blob->count(), 0.0f));
  };
  Blob bottom;
  bottom.reshape_like(input);
  set_data(bottom, data_of(input));
  Blob top;
  auto separate = make_layer(prototxt);
  separate->setup({&bottom}, {&top});
  separate->forward({&bottom}, {&top});
  set_diff(top, data_of(top_diff));
  clear_parameter_diffs(*separate);
  separate->backward({&top}, {true}, {&bottom});

  Blob shared;
  shared.reshape_like(input);
  set_data(shared, data_of(input));
  auto in_place = make_layer(prototxt);
  in_place->setup({&shared}, {&shared});
  for (std::size_t i = 0; i < in_place->blobs().size(); ++i) {
    set_data(*in_place->blobs()[i], data_of(*separate->blobs()[i]));
  }
  in_place->forward({&shared}, {&shared});
  EXPECT_EQ(data_of(shared), data_of(top));
  set_diff(shared, data_of(top_diff));
  clear_parameter_diffs(*in_place);
  in_place->backward({&shared}, {true}, {&shared});
  EXPECT_EQ(diff_of(shared), diff_of(bottom));
  for (std::size_t i = 0; i < in_place->blobs().size(); ++i) {
    EXPECT_EQ(diff_of(*in_place->blobs()[i]), diff_of(*separate->blobs()[i])) << "parameter " << i;
  }
}

}  // namespace xtrain::testing

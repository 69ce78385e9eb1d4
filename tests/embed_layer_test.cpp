// Embed: rows of the weight looked up by index plus the bias, the gradients
// of weight and bias, and the errors for bad indices and for asking for a
// gradient of the indices.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* const kEmbed =
    "name: 'embed' type: 'Embed' bottom: 'words' embed_param { num_output: 3 input_dim: 4 "
    "weight_filler { type: 'uniform' min: -1 max: 1 } "
    "bias_filler { type: 'uniform' min: -1 max: 1 } }";

XTRAIN_DEVICE_TEST(EmbedLayerTest, LooksUpRowsAndAddsTheBias) {
  Blob bottom({2, 2});
  set_data(bottom, {3, 0, 3, 1});
  Blob top;
  auto layer = make_layer(kEmbed);
  layer->setup({&bottom}, {&top});
  ASSERT_EQ(layer->blobs().size(), 2u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{4, 3}));
  EXPECT_EQ(layer->blobs()[1]->shape(), (std::vector<int>{3}));
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 2, 3}));
  const float* weight = layer->blobs()[0]->cpu_data();
  const float* bias = layer->blobs()[1]->cpu_data();
  for (int p = 0; p < 4; ++p) {
    const int index = static_cast<int>(bottom.cpu_data()[p]);
    for (int j = 0; j < 3; ++j) {
      EXPECT_FLOAT_EQ(top.cpu_data()[p * 3 + j], weight[index * 3 + j] + bias[j]) << p << " " << j;
    }
  }
}

XTRAIN_DEVICE_TEST(EmbedLayerTest, WithoutBiasCopiesRowsExactly) {
  Blob bottom({3});
  set_data(bottom, {1, 1, 0});
  Blob top;
  auto layer = make_layer(
      "name: 'embed' type: 'Embed' embed_param { num_output: 2 input_dim: 2 bias_term: false }");
  layer->setup({&bottom}, {&top});
  ASSERT_EQ(layer->blobs().size(), 1u);
  set_data(*layer->blobs()[0], {1, 2, 3, 4});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(data_of(top), (std::vector<float>{3, 4, 3, 4, 1, 2}));

  set_diff(top, {1, 1, 10, 10, 100, 100});
  set_diff(*layer->blobs()[0], {0, 0, 0, 0});
  layer->backward({&top}, {false}, {&bottom});
  // Row 1 was used twice: its gradient is the sum.
  EXPECT_EQ(diff_of(*layer->blobs()[0]), (std::vector<float>{100, 100, 11, 11}));
}

XTRAIN_DEVICE_TEST(EmbedLayerTest, WeightAndBiasGradientsMatchFiniteDifferences) {
  Blob bottom({2, 3});
  set_data(bottom, {0, 3, 2, 2, 1, 3});
  Blob top;
  auto layer = make_layer(kEmbed);
  layer->setup({&bottom}, {&top});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {-1};  // matches no bottom: indices have no gradient
  testing::GradientChecker(options).check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(EmbedLayerTest, IndicesHaveNoGradient) {
  Blob bottom({2});
  set_data(bottom, {0, 1});
  Blob top;
  auto layer = make_layer(kEmbed);
  layer->setup({&bottom}, {&top});
  EXPECT_FALSE(layer->allow_force_backward(0));
  layer->forward({&bottom}, {&top});
  expect_error([&] { layer->backward({&top}, {true}, {&bottom}); },
               {"layer 'embed' (Embed)", "'words'", "no gradient", "propagate_down: false"});
}

XTRAIN_DEVICE_TEST(EmbedLayerTest, BadIndicesNameTheValue) {
  for (float bad : {4.0f, -1.0f, 1.5f}) {
    Blob bottom({2});
    set_data(bottom, {0, bad});
    Blob top;
    auto layer = make_layer(kEmbed);
    layer->setup({&bottom}, {&top});
    std::ostringstream value;
    value << bad;
    expect_error([&] { layer->forward({&bottom}, {&top}); },
                 {"layer 'embed' (Embed)", "holds " + value.str(), "position 1", "input_dim = 4"});
  }
}

TEST(EmbedLayerTest, NeedsNumOutputAndInputDim) {
  Blob bottom({2});
  Blob top;
  auto no_output = make_layer("name: 'e' type: 'Embed' embed_param { input_dim: 4 }");
  expect_setup_error(*no_output, {&bottom}, {&top}, {"layer 'e' (Embed)", "num_output"});
  auto no_input = make_layer("name: 'e' type: 'Embed' embed_param { num_output: 4 }");
  expect_setup_error(*no_input, {&bottom}, {&top}, {"layer 'e' (Embed)", "input_dim"});
}

}  // namespace
}  // namespace xtrain

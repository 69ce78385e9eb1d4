// LSTM: two steps by hand from weights loaded as a Caffe weights file stores
// them (W_xc, b_c, W_hc), one step from exposed states, the state carried
// across forwards, gradients against finite differences (a reset inside the
// sequence, exposed states, a static input), and a TEST net that shares the
// TRAIN net's weights.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;
using testing::set_data;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::string lstm(int hidden, const std::string& extra = "") {
  return "name: 'lstm' type: 'LSTM' recurrent_param { num_output: " + std::to_string(hidden) +
         " weight_filler { type: 'uniform' min: -0.6 max: 0.6 } "
         "bias_filler { type: 'uniform' min: -0.3 max: 0.3 } " +
         extra + " }";
}

// H = D = 1. Gate order i, f, o, g: W_xc = (1, 0, 0, 0.5), b_c = (0, 2, -1, 0),
// W_hc = (0, 0, 2, 0), as a .caffemodel lists the LSTM's three blobs.
const char* kWeights = R"(
  layer { name: 'lstm' type: 'LSTM'
    blobs { shape { dim: 4 dim: 1 } data: 1 data: 0 data: 0 data: 0.5 }
    blobs { shape { dim: 4 } data: 0 data: 2 data: -1 data: 0 }
    blobs { shape { dim: 4 dim: 1 } data: 0 data: 0 data: 2 data: 0 } })";

XTRAIN_DEVICE_TEST(LstmLayerTest, ComputesTwoStepsByHandFromCaffeOrderedWeights) {
  NetParameter param;
  read_proto_from_text_string(R"(
    layer { name: 'in' type: 'Input' top: 'x' top: 'cont'
            input_param { shape { dim: 2 dim: 1 dim: 1 } shape { dim: 2 dim: 1 } } }
    layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h'
            recurrent_param { num_output: 1 } })",
                              &param, "test net");
  NetOptions options;
  options.verbose = false;
  options.device = testing::current_device();
  Net net(param, options);
  NetParameter weights;
  read_proto_from_text_string(kWeights, &weights, "weights");
  net.copy_trained_layers_from(weights);
  set_data(*net.blob_by_name("x"), {1.0f, 0.0f});
  set_data(*net.blob_by_name("cont"), {0, 1});
  net.forward();
  // Step 1 from zero states: gates (1, 2, -1, 0.5).
  const float c1 = sigmoid(1) * std::tanh(0.5f);
  const float h1 = sigmoid(-1) * std::tanh(c1);
  // Step 2, x = 0: gates (0, 2, 2 h1 - 1, 0).
  const float c2 = sigmoid(2) * c1;
  const float h2 = sigmoid(2 * h1 - 1) * std::tanh(c2);
  testing::expect_near_all(data_of(*net.blob_by_name("h")), {h1, h2}, 1e-6f);
}

XTRAIN_DEVICE_TEST(LstmLayerTest, OneStepFromExposedStates) {
  Blob x({1, 1, 1});
  Blob cont({1, 1});
  Blob h0({1, 1, 1});
  Blob c0({1, 1, 1});
  Blob h;
  Blob h_last;
  Blob c_last;
  set_data(x, {1});
  set_data(cont, {1});
  set_data(h0, {0.5f});
  set_data(c0, {1});
  auto layer = make_layer(lstm(1, "expose_hidden: true"));
  layer->setup({&x, &cont, &h0, &c0}, {&h, &h_last, &c_last});
  set_data(*layer->blobs()[0], {1, 0, 0, 0.5f});
  set_data(*layer->blobs()[1], {0, 2, -1, 0});
  set_data(*layer->blobs()[2], {0, 0, 2, 0});
  layer->forward({&x, &cont, &h0, &c0}, {&h, &h_last, &c_last});
  // Gates (1, 2, 2 * 0.5 - 1, 0.5): c = sigmoid(2) c0 + sigmoid(1) tanh(0.5).
  const float c = sigmoid(2) * 1 + sigmoid(1) * std::tanh(0.5f);
  const float expected_h = 0.5f * std::tanh(c);
  EXPECT_NEAR(data_of(h)[0], expected_h, 1e-6f);
  EXPECT_NEAR(data_of(h_last)[0], expected_h, 1e-6f);
  EXPECT_NEAR(data_of(c_last)[0], c, 1e-6f);
}

XTRAIN_DEVICE_TEST(LstmLayerTest, LearnableBlobsAreInCaffesOrder) {
  Blob x({3, 2, 5});
  Blob cont({3, 2});
  Blob x_static({2, 4});
  Blob h;
  auto layer = make_layer(lstm(6));
  layer->setup({&x, &cont, &x_static}, {&h});
  // W_xc, b_c, W_xc_static, W_hc.
  const std::vector<std::vector<int>> shapes = {{24, 5}, {24}, {24, 4}, {24, 6}};
  ASSERT_EQ(layer->blobs().size(), shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    EXPECT_EQ(layer->blobs()[i]->shape(), shapes[i]) << "blob " << i;
  }
  EXPECT_EQ(h.shape(), (std::vector<int>{3, 2, 6}));
}

XTRAIN_DEVICE_TEST(LstmLayerTest, CarriesTheStateIntoTheNextForward) {
  Blob x({2, 1, 3});
  Blob cont({2, 1});
  Blob h;
  testing::fill_uniform(x, 5);
  auto layer = make_layer(lstm(2));
  layer->setup({&x, &cont}, {&h});
  set_data(cont, {0, 1});
  layer->forward({&x, &cont}, {&h});
  const std::vector<float> fresh = data_of(h);
  set_data(cont, {1, 1});
  layer->forward({&x, &cont}, {&h});
  EXPECT_NE(data_of(h), fresh);  // went on from the previous cell
  set_data(cont, {0, 1});
  layer->forward({&x, &cont}, {&h});
  EXPECT_EQ(data_of(h), fresh);  // cont = 0 forgot it
}

XTRAIN_DEVICE_TEST(LstmLayerTest, GradientWithAResetInsideTheSequence) {
  Blob x({3, 2, 2});
  Blob cont({3, 2});
  Blob h;
  testing::fill_uniform(x, 21);
  set_data(cont, {0, 0, 1, 0, 1, 1});
  auto layer = make_layer(lstm(2));
  layer->setup({&x, &cont}, {&h});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&x, &cont}, {&h});
}

XTRAIN_DEVICE_TEST(LstmLayerTest, GradientThroughExposedStates) {
  Blob x({2, 2, 2});
  Blob cont({2, 2});
  Blob h0({1, 2, 2});
  Blob c0({1, 2, 2});
  Blob h;
  Blob h_last;
  Blob c_last;
  testing::fill_uniform(x, 21);
  testing::fill_uniform(h0, 22);
  testing::fill_uniform(c0, 23);
  set_data(cont, {1, 1, 0, 1});
  auto layer = make_layer(lstm(2, "expose_hidden: true"));
  const BlobVec bottom = {&x, &cont, &h0, &c0};
  const BlobVec top = {&h, &h_last, &c_last};
  layer->setup(bottom, top);
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 2, 3};
  testing::GradientChecker(options).check(*layer, bottom, top);
}

XTRAIN_DEVICE_TEST(LstmLayerTest, GradientWithAStaticInput) {
  Blob x({2, 2, 2});
  Blob cont({2, 2});
  Blob x_static({2, 3});
  Blob h;
  testing::fill_uniform(x, 21);
  testing::fill_uniform(x_static, 24);
  set_data(cont, {0, 0, 1, 1});
  auto layer = make_layer(lstm(2));
  layer->setup({&x, &cont, &x_static}, {&h});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 2};
  testing::GradientChecker(options).check(*layer, {&x, &cont, &x_static}, {&h});
}

XTRAIN_DEVICE_TEST(LstmLayerTest, ExposedStateOfTheWrongSizeIsAnError) {
  Blob x({2, 2, 2});
  Blob cont({2, 2});
  Blob h0({1, 2, 3});
  Blob c0({1, 2, 2});
  Blob h;
  Blob h_last;
  Blob c_last;
  auto layer = make_layer(lstm(2, "expose_hidden: true"));
  testing::expect_error(
      [&] {
        layer->setup({&x, &cont, &h0, &c0}, {&h, &h_last, &c_last});
      },
      {"'lstm'", "h_0", "bottom[2]", "1 2 3 (6)", "1 x 2 x 2"});
}

// A TEST net built after the TRAIN net takes its weights by layer name
// (Solver does this); the unrolled net must then read the shared storage.
XTRAIN_DEVICE_TEST(LstmLayerTest, ATestNetSeesTheTrainNetsWeights) {
  const std::string text = R"(
    layer { name: 'in' type: 'Input' top: 'x' top: 'cont'
            input_param { shape { dim: 2 dim: 1 dim: 1 } shape { dim: 2 dim: 1 } } }
    layer { name: 'lstm' type: 'LSTM' bottom: 'x' bottom: 'cont' top: 'h'
            recurrent_param { num_output: 1 } })";
  NetParameter param;
  read_proto_from_text_string(text, &param, "test net");
  NetOptions options;
  options.verbose = false;
  options.device = testing::current_device();
  param.mutable_state()->set_phase(TRAIN);
  Net train(param, options);
  param.mutable_state()->set_phase(TEST);
  Net test(param, options);
  NetParameter weights;
  read_proto_from_text_string(kWeights, &weights, "weights");
  train.copy_trained_layers_from(weights);
  test.share_trained_layers_with(train);
  for (Net* net : {&train, &test}) {
    set_data(*net->blob_by_name("x"), {1.0f, 0.0f});
    set_data(*net->blob_by_name("cont"), {0, 1});
    net->forward();
  }
  EXPECT_EQ(data_of(*test.blob_by_name("h")), data_of(*train.blob_by_name("h")));
}

}  // namespace
}  // namespace xtrain

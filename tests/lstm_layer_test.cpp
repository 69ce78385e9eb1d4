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
#include "recurrent_layer_test_support.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;
using testing::set_data;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

std::string lstm(int hidden, const std::string& extra = "") {
  return testing::recurrent_layer("LSTM", hidden, extra);
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

// The blobs of an LSTM with expose_hidden: x (T x N x D), cont (T x N), h_0
// and c_0 in; h, h_T and c_T out.
struct ExposedStates {
  ExposedStates(const std::vector<int>& x_shape, const std::vector<int>& h0_shape,
                const std::vector<int>& c0_shape)
      : x(x_shape), cont({x_shape[0], x_shape[1]}), h0(h0_shape), c0(c0_shape) {}
  BlobVec bottom() { return {&x, &cont, &h0, &c0}; }
  BlobVec top() { return {&h, &h_last, &c_last}; }

  Blob x, cont, h0, c0;
  Blob h, h_last, c_last;
};

XTRAIN_DEVICE_TEST(LstmLayerTest, OneStepFromExposedStates) {
  ExposedStates blobs({1, 1, 1}, {1, 1, 1}, {1, 1, 1});
  set_data(blobs.x, {1});
  set_data(blobs.cont, {1});
  set_data(blobs.h0, {0.5f});
  set_data(blobs.c0, {1});
  auto layer = make_layer(lstm(1, "expose_hidden: true"));
  layer->setup(blobs.bottom(), blobs.top());
  set_data(*layer->blobs()[0], {1, 0, 0, 0.5f});
  set_data(*layer->blobs()[1], {0, 2, -1, 0});
  set_data(*layer->blobs()[2], {0, 0, 2, 0});
  layer->forward(blobs.bottom(), blobs.top());
  // Gates (1, 2, 2 * 0.5 - 1, 0.5): c = sigmoid(2) c0 + sigmoid(1) tanh(0.5).
  const float c = sigmoid(2) * 1 + sigmoid(1) * std::tanh(0.5f);
  const float expected_h = 0.5f * std::tanh(c);
  EXPECT_NEAR(data_of(blobs.h)[0], expected_h, 1e-6f);
  EXPECT_NEAR(data_of(blobs.h_last)[0], expected_h, 1e-6f);
  EXPECT_NEAR(data_of(blobs.c_last)[0], c, 1e-6f);
}

XTRAIN_DEVICE_TEST(LstmLayerTest, LearnableBlobsAreInCaffesOrder) {
  // W_xc, b_c, W_xc_static, W_hc.
  testing::expect_blob_shapes(lstm(6), 6, {{24, 5}, {24}, {24, 4}, {24, 6}});
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
  testing::check_gradient_with_a_reset(lstm(2));
}

XTRAIN_DEVICE_TEST(LstmLayerTest, GradientThroughExposedStates) {
  ExposedStates blobs({2, 2, 2}, {1, 2, 2}, {1, 2, 2});
  testing::fill_uniform(blobs.x, 21);
  testing::fill_uniform(blobs.h0, 22);
  testing::fill_uniform(blobs.c0, 23);
  set_data(blobs.cont, {1, 1, 0, 1});
  auto layer = make_layer(lstm(2, "expose_hidden: true"));
  layer->setup(blobs.bottom(), blobs.top());
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 2, 3};
  testing::GradientChecker(options).check(*layer, blobs.bottom(), blobs.top());
}

XTRAIN_DEVICE_TEST(LstmLayerTest, GradientWithAStaticInput) {
  testing::check_gradient_with_a_static_input(lstm(2));
}

XTRAIN_DEVICE_TEST(LstmLayerTest, ExposedStateOfTheWrongSizeIsAnError) {
  ExposedStates blobs({2, 2, 2}, {1, 2, 3}, {1, 2, 2});
  auto layer = make_layer(lstm(2, "expose_hidden: true"));
  testing::expect_setup_error(*layer, blobs.bottom(), blobs.top(),
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

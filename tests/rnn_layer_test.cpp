// RNN: two steps by hand, the state carried into the next forward and reset
// by cont = 0, Caffe's blob order, gradients against finite differences
// (plain, with a reset inside the sequence, with expose_hidden, with a static
// input), and the errors for bad shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "recurrent_layer_test_support.hpp"
#include "xtrain/logging.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;
using testing::set_data;

std::string rnn(int hidden, const std::string& extra = "") {
  return testing::recurrent_layer("RNN", hidden, extra);
}

// T = 2, N = 1, D = H = 1 with W_xh = 0.5, b_h = 0.1, W_hh = 0.8, W_ho = 2,
// b_o = -0.3 (blobs in Caffe's order).
struct TwoSteps {
  Blob x{{2, 1, 1}};
  Blob cont{{2, 1}};
  Blob o;
  std::unique_ptr<Layer> layer = make_layer(rnn(1));
  TwoSteps() {
    set_data(x, {1.0f, -1.0f});
    set_data(cont, {0, 1});
    layer->setup({&x, &cont}, {&o});
    const float weights[] = {0.5f, 0.1f, 0.8f, 2.0f, -0.3f};
    for (int i = 0; i < 5; ++i) set_data(*layer->blobs()[i], {weights[i]});
  }
  std::vector<float> forward() {
    layer->forward({&x, &cont}, {&o});
    return data_of(o);
  }
};

XTRAIN_DEVICE_TEST(RnnLayerTest, ComputesTwoStepsByHand) {
  TwoSteps net;
  // h_1 = tanh(0.5 x_1 + 0.1) (cont_1 = 0: h_0 is dropped), o_t = tanh(2 h_t - 0.3),
  // h_2 = tanh(0.8 h_1 + 0.5 x_2 + 0.1).
  const float h1 = std::tanh(0.6f);
  const float h2 = std::tanh(0.8f * h1 - 0.4f);
  testing::expect_near_all(net.forward(), {std::tanh(2 * h1 - 0.3f), std::tanh(2 * h2 - 0.3f)},
                           1e-6f);
}

XTRAIN_DEVICE_TEST(RnnLayerTest, CarriesTheStateIntoTheNextForwardUnlessContIsZero) {
  TwoSteps net;
  const std::vector<float> first = net.forward();
  // cont_1 = 0 again: the next chunk starts a new sequence, same output.
  EXPECT_EQ(net.forward(), first);
  // cont_1 = 1: it continues from h_2 of the previous forward.
  set_data(net.cont, {1, 1});
  const float h1 = std::tanh(0.6f);
  const float h2 = std::tanh(0.8f * h1 - 0.4f);
  const float next_h1 = std::tanh(0.8f * h2 + 0.6f);
  EXPECT_NEAR(net.forward()[0], std::tanh(2 * next_h1 - 0.3f), 1e-6f);
}

XTRAIN_DEVICE_TEST(RnnLayerTest, LearnableBlobsAreInCaffesOrder) {
  // W_xh, b_h, W_xh_static, W_hh, W_ho, b_o.
  testing::expect_blob_shapes(rnn(6), 6, {{6, 5}, {6}, {6, 4}, {6, 6}, {6, 6}, {6}});
}

XTRAIN_DEVICE_TEST(RnnLayerTest, GradientWithAResetInsideTheSequence) {
  testing::check_gradient_with_a_reset(rnn(3));
}

XTRAIN_DEVICE_TEST(RnnLayerTest, GradientThroughExposedStates) {
  Blob x({3, 2, 2});
  Blob cont({3, 2});
  Blob h0({1, 2, 3});
  Blob o;
  Blob h_last;
  testing::fill_uniform(x, 11);
  testing::fill_uniform(h0, 12);
  set_data(cont, {1, 1, 1, 0, 1, 1});
  auto layer = make_layer(rnn(3, "expose_hidden: true"));
  layer->setup({&x, &cont, &h0}, {&o, &h_last});
  EXPECT_EQ(h_last.shape(), (std::vector<int>{1, 2, 3}));
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0, 2};
  testing::GradientChecker(options).check(*layer, {&x, &cont, &h0}, {&o, &h_last});
}

XTRAIN_DEVICE_TEST(RnnLayerTest, GradientWithAStaticInput) {
  testing::check_gradient_with_a_static_input(rnn(2));
}

XTRAIN_DEVICE_TEST(RnnLayerTest, ContOfAnotherShapeIsAnError) {
  Blob x({3, 2, 2});
  Blob cont({3, 1});
  Blob o;
  auto layer = make_layer(rnn(3));
  testing::expect_setup_error(*layer, {&x, &cont}, {&o},
                              {"layer 'rnn' (RNN)", "cont", "3 1 (3)", "3 x 2"});
}

XTRAIN_DEVICE_TEST(RnnLayerTest, ChangingTheNumberOfStepsIsAnError) {
  Blob x({3, 2, 2});
  Blob cont({3, 2});
  Blob o;
  auto layer = make_layer(rnn(3));
  layer->setup({&x, &cont}, {&o});
  x.reshape({4, 2, 2});
  cont.reshape({4, 2});
  testing::expect_error(
      [&] {
        layer->reshape({&x, &cont}, {&o});
      },
      {"'rnn'", "3 time steps", "rebuild"});
}

XTRAIN_DEVICE_TEST(RnnLayerTest, MoreStreamsAfterSetupWork) {
  TwoSteps net;
  const float first = net.forward()[0];
  net.x.reshape({2, 3, 1});
  net.cont.reshape({2, 3});
  set_data(net.x, {1, 1, 1, -1, -1, -1});
  set_data(net.cont, {0, 0, 0, 1, 1, 1});
  net.layer->reshape({&net.x, &net.cont}, {&net.o});
  const std::vector<float> o = net.forward();
  ASSERT_EQ(o.size(), 6u);
  for (int n = 0; n < 3; ++n) EXPECT_NEAR(o[n], first, 1e-6f);
}

XTRAIN_DEVICE_TEST(RnnLayerTest, DebugInfoLogsWhatEachUnrolledLayerWrites) {
  Blob x({2, 1, 1});
  Blob cont({2, 1});
  Blob o;
  set_data(cont, {0, 1});
  auto layer = make_layer(rnn(1, "debug_info: true"));
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kInfo);
  ::testing::internal::CaptureStderr();
  layer->setup({&x, &cont}, {&o});
  layer->forward({&x, &cont}, {&o});
  layer->backward({&o}, {true, false}, {&x, &cont});
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_min_log_severity(saved);
  EXPECT_NE(log.find("forward rnn_h_neuron_2 top h_2 data: "), std::string::npos) << log;
  EXPECT_NE(log.find("backward rnn_x_transform bottom x diff: "), std::string::npos) << log;
}

XTRAIN_DEVICE_TEST(RnnLayerTest, MissingNumOutputIsAnError) {
  Blob x({3, 2, 2});
  Blob cont({3, 2});
  Blob o;
  auto layer = make_layer("name: 'rnn' type: 'RNN'");
  testing::expect_setup_error(*layer, {&x, &cont}, {&o}, {"'rnn'", "num_output"});
}

}  // namespace
}  // namespace xtrain

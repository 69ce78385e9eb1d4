// The fused RNN and LSTM (layers/fused_recurrence.hpp) against the unrolled
// net they replace (XTRAIN_RECURRENT=unrolled, the reference): the same
// initial weights, and the same outputs, final states and gradients (x,
// x_static, the initial states, every parameter) over sequences that reset
// inside, carry the state into the next forward, take a static input and
// expose their states. The per-layer tests (lstm_layer_test.cpp,
// rnn_layer_test.cpp) check the fused layers against hand-computed values and
// finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "layers/cell_tanh.hpp"
#include "layers/recurrent_layer.hpp"
#include "recurrent_layer_test_support.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::diff_of;
using testing::fill_uniform;
using testing::make_layer;
using testing::ScopedEnvironment;
using testing::set_data;

struct Case {
  std::string type;  // "LSTM" or "RNN"
  int steps = 4;
  int streams = 3;
  int input_size = 5;
  int hidden = 3;
  int static_size = 0;  // 0: no x_static
  bool expose_hidden = false;
  std::vector<float> cont;           // steps x streams
  std::vector<bool> propagate_down;  // per bottom; empty: all but cont
};

int state_count(const Case& c) { return c.type == "LSTM" ? 2 : 1; }

// What one implementation produced: two forwards (the second continues the
// first's state unless the states are exposed), then a backward.
struct Results {
  std::vector<std::vector<float>> weights;  // as set up
  std::vector<std::vector<float>> tops;     // after each forward, every top
  std::vector<std::vector<float>> bottom_diffs;
  std::vector<std::vector<float>> param_diffs;
  bool fused = false;
};

Results run(const Case& c, const char* implementation) {
  ScopedEnvironment choice("XTRAIN_RECURRENT", implementation);
  const std::string extra = c.expose_hidden ? "expose_hidden: true" : "";
  std::vector<std::unique_ptr<Blob>> bottoms;
  bottoms.push_back(std::make_unique<Blob>(std::vector<int>{c.steps, c.streams, c.input_size}));
  bottoms.push_back(std::make_unique<Blob>(std::vector<int>{c.steps, c.streams}));
  fill_uniform(*bottoms[0], 5);
  set_data(*bottoms[1], c.cont);
  if (c.static_size > 0) {
    bottoms.push_back(std::make_unique<Blob>(std::vector<int>{c.streams, c.static_size}));
    fill_uniform(*bottoms.back(), 7);
  }
  const int states = c.expose_hidden ? state_count(c) : 0;
  for (int k = 0; k < states; ++k) {
    bottoms.push_back(std::make_unique<Blob>(std::vector<int>{1, c.streams, c.hidden}));
    fill_uniform(*bottoms.back(), 17 + k);
  }
  std::vector<std::unique_ptr<Blob>> tops;
  for (int k = 0; k < 1 + states; ++k) tops.push_back(std::make_unique<Blob>());
  BlobVec bottom, top;
  for (auto& blob : bottoms) bottom.push_back(blob.get());
  for (auto& blob : tops) top.push_back(blob.get());

  auto layer = make_layer(testing::recurrent_layer(c.type, c.hidden, extra));
  layer->setup(bottom, top);
  Results results;
  results.fused = dynamic_cast<RecurrentLayer&>(*layer).fused();
  for (const auto& blob : layer->blobs()) results.weights.push_back(data_of(*blob));
  for (int pass = 0; pass < 2; ++pass) {
    layer->forward(bottom, top);
    for (Blob* blob : top) results.tops.push_back(data_of(*blob));
  }
  for (std::size_t k = 0; k < top.size(); ++k) {
    Blob gradient;
    gradient.reshape_like(*top[k]);
    fill_uniform(gradient, 23 + k);
    testing::set_diff(*top[k], data_of(gradient));
  }
  for (const auto& blob : layer->blobs()) {
    std::fill_n(blob->mutable_cpu_diff(), blob->count(), 0.5f);  // gradients accumulate
  }
  std::vector<bool> propagate_down = c.propagate_down;
  if (propagate_down.empty()) {
    propagate_down.assign(bottom.size(), true);
    propagate_down[1] = false;
  }
  for (std::size_t b = 0; b < bottom.size(); ++b) {
    std::fill_n(bottom[b]->mutable_cpu_diff(), bottom[b]->count(), -7.0f);
  }
  layer->backward(top, propagate_down, bottom);
  for (std::size_t b = 0; b < bottom.size(); ++b) {
    if (propagate_down[b]) results.bottom_diffs.push_back(diff_of(*bottom[b]));
  }
  for (const auto& blob : layer->blobs()) results.param_diffs.push_back(diff_of(*blob));
  return results;
}

void expect_close(const std::vector<std::vector<float>>& fused,
                  const std::vector<std::vector<float>>& unrolled, const char* what) {
  ASSERT_EQ(fused.size(), unrolled.size()) << what;
  for (std::size_t i = 0; i < fused.size(); ++i) {
    ASSERT_EQ(fused[i].size(), unrolled[i].size()) << what << " " << i;
    for (std::size_t j = 0; j < fused[i].size(); ++j) {
      const float tolerance = 2e-5f * std::max(1.0f, std::fabs(unrolled[i][j]));
      EXPECT_NEAR(fused[i][j], unrolled[i][j], tolerance) << what << " " << i << " [" << j << "]";
    }
  }
}

void expect_fused_matches_unrolled(const Case& c) {
  const Results unrolled = run(c, "unrolled");
  const Results fused = run(c, "fused");
  EXPECT_FALSE(unrolled.fused);
  EXPECT_TRUE(fused.fused);
  // The same seed gives the same initial weights.
  expect_close(fused.weights, unrolled.weights, "initial weights");
  expect_close(fused.tops, unrolled.tops, "tops");
  expect_close(fused.bottom_diffs, unrolled.bottom_diffs, "bottom gradients");
  expect_close(fused.param_diffs, unrolled.param_diffs, "parameter gradients");
}

// Stream 0 runs through, stream 1 restarts at t = 2, stream 2 at t = 1 and 3;
// all continue the previous forward at t = 0 except stream 2.
const std::vector<float> kResets = {1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 1, 1};

XTRAIN_DEVICE_TEST(RecurrentFusedTest, LstmMatchesTheUnrolledNetWithResetsAndCarriedState) {
  Case c;
  c.type = "LSTM";
  c.cont = kResets;
  expect_fused_matches_unrolled(c);
}

XTRAIN_DEVICE_TEST(RecurrentFusedTest, LstmMatchesTheUnrolledNetWithStaticInputAndExposedStates) {
  Case c;
  c.type = "LSTM";
  c.static_size = 2;
  c.expose_hidden = true;
  c.cont = kResets;
  expect_fused_matches_unrolled(c);
}

XTRAIN_DEVICE_TEST(RecurrentFusedTest, LstmMatchesTheUnrolledNetWithoutInputGradients) {
  Case c;
  c.type = "LSTM";
  c.static_size = 2;
  c.expose_hidden = true;
  c.cont = kResets;
  c.propagate_down = {false, false, true, false, true};
  expect_fused_matches_unrolled(c);
}

XTRAIN_DEVICE_TEST(RecurrentFusedTest, RnnMatchesTheUnrolledNetWithResetsAndCarriedState) {
  Case c;
  c.type = "RNN";
  c.cont = kResets;
  expect_fused_matches_unrolled(c);
}

XTRAIN_DEVICE_TEST(RecurrentFusedTest, RnnMatchesTheUnrolledNetWithStaticInputAndExposedStates) {
  Case c;
  c.type = "RNN";
  c.static_size = 2;
  c.expose_hidden = true;
  c.cont = kResets;
  expect_fused_matches_unrolled(c);
}

XTRAIN_DEVICE_TEST(RecurrentFusedTest, OneStepOneStreamMatchesTheUnrolledNet) {
  for (const char* type : {"LSTM", "RNN"}) {
    Case c;
    c.type = type;
    c.steps = 1;
    c.streams = 1;
    c.cont = {1};
    c.expose_hidden = true;
    expect_fused_matches_unrolled(c);
  }
}

// The LSTM cell's vectorisable tanh and sigmoid against the standard library
// on a fine grid (both branches of cell_tanh and the cap), and at the edges.
TEST(RecurrentFusedTest, CellTanhAndSigmoidAreWithinAFewUlps) {
  double worst_tanh = 0.0;
  double worst_sigmoid = 0.0;
  for (int k = -240000; k <= 240000; ++k) {
    const float x = static_cast<float>(k) * 5e-5f;
    const double exact = std::tanh(static_cast<double>(x));
    const double error = std::fabs(ops::cell_tanh(x) - exact) /
                         std::max(std::fabs(exact), static_cast<double>(FLT_MIN));
    worst_tanh = std::max(worst_tanh, error);
    const double sigmoid = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    // Absolute: the tanh form, like ops::SigmoidForward, loses the relative
    // precision of values near 0.
    worst_sigmoid = std::max(worst_sigmoid, std::fabs(ops::cell_sigmoid(x) - sigmoid));
  }
  EXPECT_LT(worst_tanh, 4 * FLT_EPSILON);
  EXPECT_LT(worst_sigmoid, FLT_EPSILON);
  EXPECT_EQ(ops::cell_tanh(0.0f), 0.0f);
  EXPECT_EQ(ops::cell_tanh(1e-30f), 1e-30f);
  EXPECT_EQ(ops::cell_tanh(100.0f), 1.0f);
  EXPECT_EQ(ops::cell_tanh(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(ops::cell_tanh(std::numeric_limits<float>::quiet_NaN())));
}

TEST(RecurrentFusedTest, AnUnknownImplementationIsAnErrorNamingBoth) {
  ScopedEnvironment choice("XTRAIN_RECURRENT", "fast");
  Blob x({2, 1, 3});
  Blob cont({2, 1});
  Blob top;
  auto layer = make_layer(testing::recurrent_layer("LSTM", 2));
  try {
    layer->setup({&x, &cont}, {&top});
    FAIL() << "XTRAIN_RECURRENT=fast was accepted";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("XTRAIN_RECURRENT=fast"), std::string::npos) << message;
    EXPECT_NE(message.find("'fused'"), std::string::npos) << message;
    EXPECT_NE(message.find("'unrolled'"), std::string::npos) << message;
  }
}

TEST(RecurrentFusedTest, DebugInfoKeepsTheUnrolledNet) {
  Blob x({2, 1, 3});
  Blob cont({2, 1});
  Blob top;
  auto layer = make_layer(testing::recurrent_layer("RNN", 2, "debug_info: true"));
  layer->setup({&x, &cont}, {&top});
  EXPECT_FALSE(dynamic_cast<RecurrentLayer&>(*layer).fused());
}

}  // namespace
}  // namespace xtrain

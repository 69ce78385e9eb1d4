// HingeLoss: L1 and L2 losses and gradients against a hand computation,
// gradients against finite differences away from the hinges, and the errors
// for bad labels.
#include <gtest/gtest.h>

#include <cmath>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace xtrain {
namespace {

using namespace testing;

// Scores (N = 2, K = 3) and labels (0, 2). Margins max(0, 1 -/+ s):
//   sample 0: true class 0: 1 - 0.5 = 0.5;  1 - 2 -> 0;  1 + 0.2 = 1.2
//   sample 1: 1 + 1.5 = 2.5;  1 + 0.3 = 1.3;  true class 2: 1 + 0.4 = 1.4
struct Fixture {
  Blob scores{std::vector<int>{2, 3}};
  Blob labels{std::vector<int>{2, 1, 1, 1}};
  Blob loss;
  Fixture() {
    fill_values(scores, {0.5f, -2.0f, 0.2f, 1.5f, 0.3f, -0.4f});
    fill_values(labels, {0, 2});
  }
  BlobVec bottom() { return {&scores, &labels}; }
  BlobVec top() { return {&loss}; }
};

XTRAIN_DEVICE_TEST(HingeLossLayer, L1ByHand) {
  // (0.5 + 0 + 1.2 + 2.5 + 1.3 + 1.4) / 2 = 3.45; the gradient is +-1/N where
  // the margin is positive, negative for the true class.
  Fixture f;
  auto layer = make_loss_layer("HingeLoss");
  layer->setup(f.bottom(), f.top());
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  layer->forward(f.bottom(), f.top());
  EXPECT_NEAR(f.loss.cpu_data()[0], 3.45, 1e-6);
  layer->backward(f.top(), {true, false}, f.bottom());
  const float expected[] = {-0.5f, 0.0f, 0.5f, 0.5f, 0.5f, -0.5f};
  for (int j = 0; j < 6; ++j) EXPECT_FLOAT_EQ(f.scores.cpu_diff()[j], expected[j]) << j;
}

XTRAIN_DEVICE_TEST(HingeLossLayer, L2ByHand) {
  // (0.25 + 0 + 1.44 + 6.25 + 1.69 + 1.96) / 2 = 5.795; the gradient is
  // +-2 m / N = +-m, negative for the true class.
  Fixture f;
  auto layer = make_loss_layer("HingeLoss", "hinge_loss_param { norm: L2 }");
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  EXPECT_NEAR(f.loss.cpu_data()[0], 5.795, 1e-5);
  layer->backward(f.top(), {true, false}, f.bottom());
  const float expected[] = {-0.5f, 0.0f, 1.2f, 2.5f, 1.3f, -1.4f};
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(f.scores.cpu_diff()[j], expected[j], 1e-6) << j;
}

// Random scores kept 0.1 away from the hinges at +-1, so finite differences
// with step 0.01 never straddle one.
void fill_away_from_hinges(Blob& scores) {
  fill_uniform(scores, -2, 2, 21);
  float* s = scores.mutable_cpu_data();
  for (std::size_t j = 0; j < scores.count(); ++j) {
    if (std::fabs(std::fabs(s[j]) - 1.0f) < 0.1f) s[j] += s[j] > 0 ? 0.25f : -0.25f;
  }
}

class HingeNormTest : public testing::DeviceTestWithParam<const char*> {};

TEST_P(HingeNormTest, GradientMatchesFiniteDifferences) {
  Blob scores({4, 5, 1, 1}), labels({4}), loss;
  fill_away_from_hinges(scores);
  fill_values(labels, {0, 4, 2, 2});
  auto layer = make_loss_layer("HingeLoss", GetParam());
  layer->setup({&scores, &labels}, {&loss});
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&scores, &labels}, {&loss});
}

XTRAIN_INSTANTIATE_ON_DEVICES(HingeNormTest, ::testing::Values("", "hinge_loss_param { norm: L1 }",
                                                               "hinge_loss_param { norm: L2 }"));

XTRAIN_DEVICE_TEST(HingeLossLayer, UserErrors) {
  Fixture f;
  f.labels.mutable_cpu_data()[1] = 3;
  auto layer = make_loss_layer("HingeLoss");
  layer->setup(f.bottom(), f.top());
  expect_error([&] { layer->forward(f.bottom(), f.top()); },
               {"layer 'loss' (HingeLoss): label 3 at position 1 is out of range: "
                "the predictions have 3 classes, so labels must be in [0, 2]"});

  Blob scores({2, 3}), labels({2, 2}), loss;
  auto other = make_loss_layer("HingeLoss");
  expect_error(
      [&] {
        other->setup({&scores, &labels}, {&loss});
      },
      {"must hold one label per sample (N x 1 x 1 x 1): 2 values"});

  Fixture g;
  auto no_labels = make_loss_layer("HingeLoss");
  no_labels->setup(g.bottom(), g.top());
  no_labels->forward(g.bottom(), g.top());
  expect_error(
      [&] {
        no_labels->backward(g.top(), {true, true}, g.bottom());
      },
      {"cannot backpropagate to its labels"});
}

}  // namespace
}  // namespace xtrain

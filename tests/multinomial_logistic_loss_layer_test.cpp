// MultinomialLogisticLoss: -mean log p[label] by hand, the 1e-20 clamp,
// finite-difference gradients, and the label errors.
#include <gtest/gtest.h>

#include <cmath>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace xtrain {
namespace {

using namespace testing;

XTRAIN_DEVICE_TEST(MultinomialLogisticLossLayer, ByHand) {
  // p[label] = 0.8, 0.5, 0.1: loss = -(ln 0.8 + ln 0.5 + ln 0.1) / 3;
  // dE/dp[label] = -1 / (3 p[label]), 0 elsewhere.
  Blob p({3, 2}), labels({3, 1, 1, 1}), loss;
  fill_values(p, {0.2f, 0.8f, 0.5f, 0.5f, 0.1f, 0.9f});
  fill_values(labels, {1, 0, 0});
  auto layer = make_loss_layer("MultinomialLogisticLoss");
  layer->setup({&p, &labels}, {&loss});
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  layer->forward({&p, &labels}, {&loss});
  EXPECT_NEAR(loss.cpu_data()[0], -(std::log(0.8) + std::log(0.5) + std::log(0.1)) / 3, 1e-6);
  layer->backward({&loss}, {true, false}, {&p, &labels});
  const double expected[] = {0, -1 / 2.4, -1 / 1.5, 0, -1 / 0.3, 0};
  for (int j = 0; j < 6; ++j) EXPECT_NEAR(p.cpu_diff()[j], expected[j], 1e-5) << j;
}

XTRAIN_DEVICE_TEST(MultinomialLogisticLossLayer, ZeroProbabilityIsClampedTo1e20) {
  Blob p({1, 2}), labels({1}), loss;
  fill_values(p, {1, 0});
  fill_values(labels, {1});
  auto layer = make_loss_layer("MultinomialLogisticLoss");
  layer->setup({&p, &labels}, {&loss});
  layer->forward({&p, &labels}, {&loss});
  EXPECT_NEAR(loss.cpu_data()[0], -std::log(1e-20), 1e-4);
  layer->backward({&loss}, {true, false}, {&p, &labels});
  EXPECT_FLOAT_EQ(p.cpu_diff()[1], -1e20f);
}

XTRAIN_DEVICE_TEST(MultinomialLogisticLossLayer, GradientMatchesFiniteDifferences) {
  Blob p({4, 5}), labels({4}), loss;
  fill_uniform(p, 0.2f, 1.0f, 61);
  fill_values(labels, {4, 0, 2, 2});
  auto layer = make_loss_layer("MultinomialLogisticLoss");
  layer->setup({&p, &labels}, {&loss});
  testing::GradientCheckOptions options;
  options.step = 1e-3f;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&p, &labels}, {&loss});
}

XTRAIN_DEVICE_TEST(MultinomialLogisticLossLayer, UserErrors) {
  Blob p({2, 3}), labels({2}), wide_labels({2, 2}), loss;
  fill_uniform(p, 0.1f, 1.0f, 62);
  fill_values(labels, {1, -1});
  auto layer = make_loss_layer("MultinomialLogisticLoss");
  layer->setup({&p, &labels}, {&loss});
  expect_error(
      [&] {
        layer->forward({&p, &labels}, {&loss});
      },
      {"layer 'loss' (MultinomialLogisticLoss): label -1 at position 1 is "
       "out of range: the predictions have 3 classes"});
  auto wide = make_loss_layer("MultinomialLogisticLoss");
  expect_error(
      [&] {
        wide->setup({&p, &wide_labels}, {&loss});
      },
      {"must hold one label per sample (N x 1 x 1 x 1): 2 values"});
  fill_values(labels, {1, 2});
  layer->forward({&p, &labels}, {&loss});
  EXPECT_FALSE(layer->allow_force_backward(1));
  expect_error(
      [&] {
        layer->backward({&loss}, {true, true}, {&p, &labels});
      },
      {"cannot backpropagate to its labels bottom 1"});
}

}  // namespace
}  // namespace xtrain

// EuclideanLoss: sum((a - b)^2) / (2N) against a hand computation, gradients
// to both bottoms (with opposite signs) against finite differences, loss
// weights, and the errors for mismatched bottoms.
#include <gtest/gtest.h>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace xtrain {
namespace {

using namespace testing;

XTRAIN_DEVICE_TEST(EuclideanLossLayer, ByHand) {
  // a - b = (1, 0, 2, 3): sum of squares 14, N = 2 -> loss 14 / 4 = 3.5;
  // dE/da = (a - b) / 2, dE/db = -(a - b) / 2.
  Blob a({2, 2}), b({2, 2}), loss;
  fill_values(a, {1, 2, 3, 4});
  fill_values(b, {0, 2, 1, 1});
  auto layer = make_loss_layer("EuclideanLoss");
  layer->setup({&a, &b}, {&loss});
  EXPECT_EQ(loss.num_axes(), 0);
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);  // a loss by default
  const float weighted = layer->forward({&a, &b}, {&loss});
  EXPECT_FLOAT_EQ(loss.cpu_data()[0], 3.5f);
  EXPECT_FLOAT_EQ(weighted, 3.5f);
  layer->backward({&loss}, {true, true}, {&a, &b});
  const float expected[] = {0.5f, 0.0f, 1.0f, 1.5f};
  for (int j = 0; j < 4; ++j) {
    EXPECT_FLOAT_EQ(a.cpu_diff()[j], expected[j]) << j;
    EXPECT_FLOAT_EQ(b.cpu_diff()[j], -expected[j]) << j;
  }
}

XTRAIN_DEVICE_TEST(EuclideanLossLayer, LossWeightScalesLossAndGradient) {
  Blob a({2, 2}), b({2, 2}), loss;
  fill_values(a, {1, 2, 3, 4});
  fill_values(b, {0, 2, 1, 1});
  auto layer = make_loss_layer("EuclideanLoss", "loss_weight: 3");
  layer->setup({&a, &b}, {&loss});
  EXPECT_FLOAT_EQ(layer->forward({&a, &b}, {&loss}), 3 * 3.5f);
  EXPECT_FLOAT_EQ(loss.cpu_data()[0], 3.5f);
  layer->backward({&loss}, {true, false}, {&a, &b});
  EXPECT_FLOAT_EQ(a.cpu_diff()[3], 3 * 1.5f);
}

XTRAIN_DEVICE_TEST(EuclideanLossLayer, GradientsOfBothBottoms) {
  // Shapes differ but each sample holds 6 values.
  Blob a({3, 2, 3, 1}), b({3, 6}), loss;
  fill_uniform(a, -1, 1, 5);
  fill_uniform(b, -1, 1, 6);
  auto layer = make_loss_layer("EuclideanLoss");
  layer->setup({&a, &b}, {&loss});
  testing::GradientChecker().check(*layer, {&a, &b}, {&loss});
  EXPECT_TRUE(layer->allow_force_backward(1));  // both bottoms are predictions
}

TEST(EuclideanLossLayer, MismatchedBottomsAreErrors) {
  Blob a({2, 3}), b({2, 4}), c({3, 3}), loss;
  auto layer = make_loss_layer("EuclideanLoss", "bottom: 'pred' bottom: 'target'");
  expect_error(
      [&] {
        layer->setup({&a, &b}, {&loss});
      },
      {"layer 'loss' (EuclideanLoss): 'pred' (bottom 0) of shape 2 3 ",
       "same number of values per sample (3 vs 4)"});
  auto other = make_loss_layer("EuclideanLoss");
  expect_error(
      [&] {
        other->setup({&a, &c}, {&loss});
      },
      {"layer 'loss' (EuclideanLoss)", "same first (batch) dimension"});
}

}  // namespace
}  // namespace xtrain

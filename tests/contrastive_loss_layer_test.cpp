// ContrastiveLoss: the loss and gradients by hand (current and legacy forms),
// against a naive reference on random pairs, gradients of both feature
// bottoms against finite differences, and the shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"

namespace xtrain {
namespace {

using namespace testing;

// Pair 0 is similar with a - b = (1, 0): d = 1. Pair 1 is dissimilar with
// a - b = (-0.3, -0.4): d = 0.25, distance 0.5. Margin 1, N = 2.
struct Fixture {
  Blob a{std::vector<int>{2, 2, 1, 1}};
  Blob b{std::vector<int>{2, 2, 1, 1}};
  Blob similar{std::vector<int>{2, 1, 1, 1}};
  Blob loss;
  Fixture() {
    fill_values(a, {1, 0, 0, 0});
    fill_values(b, {0, 0, 0.3f, 0.4f});
    fill_values(similar, {1, 0});
  }
  BlobVec bottom() { return {&a, &b, &similar}; }
  BlobVec top() { return {&loss}; }
};

XTRAIN_DEVICE_TEST(ContrastiveLossLayer, ByHand) {
  // loss = (1 + (1 - 0.5)^2) / (2 * 2) = 0.3125.
  // dE/da: pair 0: (a - b) / 2 = (0.5, 0);
  //        pair 1: -1/2 * (1 - 0.5) / (0.5 + 1e-4) * (-0.3, -0.4).
  Fixture f;
  auto layer = make_loss_layer("ContrastiveLoss");
  layer->setup(f.bottom(), f.top());
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  layer->forward(f.bottom(), f.top());
  EXPECT_NEAR(f.loss.cpu_data()[0], 0.3125, 1e-6);
  layer->backward(f.top(), {true, true, false}, f.bottom());
  const double factor = -0.5 * 0.5 / (0.5 + 1e-4);
  const double expected[] = {0.5, 0, factor * -0.3, factor * -0.4};
  for (int j = 0; j < 4; ++j) {
    EXPECT_NEAR(f.a.cpu_diff()[j], expected[j], 1e-6) << j;
    EXPECT_NEAR(f.b.cpu_diff()[j], -expected[j], 1e-6) << j;
  }
}

XTRAIN_DEVICE_TEST(ContrastiveLossLayer, LegacyByHand) {
  // loss = (1 + max(1 - 0.25, 0)) / 4 = 0.4375; dissimilar gradient -(a - b) / 2.
  Fixture f;
  auto layer =
      make_loss_layer("ContrastiveLoss", "contrastive_loss_param { legacy_version: true }");
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  EXPECT_NEAR(f.loss.cpu_data()[0], 0.4375, 1e-6);
  layer->backward(f.top(), {true, false, false}, f.bottom());
  const double expected[] = {0.5, 0, 0.15, 0.2};
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(f.a.cpu_diff()[j], expected[j], 1e-6) << j;
}

XTRAIN_DEVICE_TEST(ContrastiveLossLayer, PairsBeyondTheMarginCostNothing) {
  Fixture f;
  auto layer = make_loss_layer("ContrastiveLoss", "contrastive_loss_param { margin: 0.4 }");
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  EXPECT_NEAR(f.loss.cpu_data()[0], 0.25, 1e-6);  // only the similar pair's 1 / 4
  layer->backward(f.top(), {true, false, false}, f.bottom());
  EXPECT_EQ(f.a.cpu_diff()[2], 0.0f);
  EXPECT_EQ(f.a.cpu_diff()[3], 0.0f);
}

// Random pairs (N = 6, C = 3) with features in [-0.3, 0.3], so dissimilar
// pairs mostly lie inside the margin.
struct RandomPairs {
  Blob a{std::vector<int>{6, 3}};
  Blob b{std::vector<int>{6, 3}};
  Blob similar{std::vector<int>{6}};
  Blob loss;
  RandomPairs() {
    fill_uniform(a, -0.3f, 0.3f, 51);
    fill_uniform(b, -0.3f, 0.3f, 52);
    fill_values(similar, {1, 0, 0, 1, 0, 0});
  }
  BlobVec bottom() { return {&a, &b, &similar}; }
  BlobVec top() { return {&loss}; }

  double reference(float margin, bool legacy) const {
    double sum = 0;
    for (int n = 0; n < 6; ++n) {
      double d = 0;
      for (int c = 0; c < 3; ++c) {
        const double diff = double(a.cpu_data()[n * 3 + c]) - b.cpu_data()[n * 3 + c];
        d += diff * diff;
      }
      if (similar.cpu_data()[n] != 0) {
        sum += d;
      } else if (legacy) {
        sum += std::max(margin - d, 0.0);
      } else {
        sum += std::pow(std::max(margin - std::sqrt(d), 0.0), 2);
      }
    }
    return sum / 12;
  }
};

class ContrastiveVersionTest : public testing::DeviceTestWithParam<bool> {};

TEST_P(ContrastiveVersionTest, LossMatchesTheReference) {
  RandomPairs p;
  const bool legacy = GetParam();
  auto layer = make_loss_layer(
      "ContrastiveLoss", std::string("contrastive_loss_param { margin: 0.5 legacy_version: ") +
                             (legacy ? "true" : "false") + " }");
  layer->setup(p.bottom(), p.top());
  layer->forward(p.bottom(), p.top());
  EXPECT_NEAR(p.loss.cpu_data()[0], p.reference(0.5f, legacy), 1e-6);
}

TEST_P(ContrastiveVersionTest, GradientsOfBothFeatureBottoms) {
  RandomPairs p;
  auto layer = make_loss_layer(
      "ContrastiveLoss", std::string("contrastive_loss_param { margin: 0.5 legacy_version: ") +
                             (GetParam() ? "true" : "false") + " }");
  layer->setup(p.bottom(), p.top());
  testing::GradientCheckOptions options;
  options.step = 1e-3f;
  // Caffe divides by (distance + 1e-4), a relative error of up to 1e-4 / 0.1.
  options.threshold = 2e-3f;
  options.bottoms_to_check = {0, 1};
  testing::GradientChecker(options).check(*layer, p.bottom(), p.top());
}

XTRAIN_INSTANTIATE_ON_DEVICES(ContrastiveVersionTest, ::testing::Bool(),
                              [](const ::testing::TestParamInfo<bool>& param_info) {
                                return std::string(param_info.param ? "Legacy" : "Current");
                              });

XTRAIN_DEVICE_TEST(ContrastiveLossLayer, UserErrors) {
  Blob a({2, 3}), b({2, 4}), spatial({2, 3, 2, 1}), similar({2}), three({3}), loss;
  auto layer = make_loss_layer("ContrastiveLoss", "bottom: 'f1' bottom: 'f2' bottom: 'sim'");
  expect_error(
      [&] {
        layer->setup({&a, &b, &similar}, {&loss});
      },
      {"layer 'loss' (ContrastiveLoss): the features 'f1' (bottom 0) of "
       "shape 2 3 (6) and 'f2' (bottom 1) of shape 2 4 (8) must have the "
       "same size C"});
  auto other = make_loss_layer("ContrastiveLoss");
  expect_error(
      [&] {
        other->setup({&spatial, &spatial, &similar}, {&loss});
      },
      {"must be N x C (or N x C x 1 x 1)"});
  auto labels = make_loss_layer("ContrastiveLoss");
  expect_error(
      [&] {
        labels->setup({&a, &a, &three}, {&loss});
      },
      {"the similarity labels bottom 2 of shape 3 (3) must hold one value per "
       "pair: 2"});
  Fixture f;
  auto no_label_gradient = make_loss_layer("ContrastiveLoss");
  no_label_gradient->setup(f.bottom(), f.top());
  no_label_gradient->forward(f.bottom(), f.top());
  EXPECT_FALSE(no_label_gradient->allow_force_backward(2));
  EXPECT_TRUE(no_label_gradient->allow_force_backward(1));
  expect_error(
      [&] {
        no_label_gradient->backward(f.top(), {true, true, true}, f.bottom());
      },
      {"cannot backpropagate to its similarity labels"});
}

}  // namespace
}  // namespace xtrain

// SoftmaxWithLoss: the loss against one computed by hand (naive softmax, sum
// of -log p over the non-ignored positions, divided by the normaliser of each
// mode), gradients for every mode, loss weights, the probability top and the
// errors a user can cause.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "error_message.hpp"
#include "gradient_checker.hpp"
#include "loss_layer_test_helpers.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::NormalizationCase;
using testing::one;
using testing::valid_count;

// Scores are N=3 x C=4 x 1 x 2: outer = 3, inner = 2, six labelled positions.
constexpr int kNum = 3;
constexpr int kClasses = 4;
constexpr int kInner = 2;
const std::vector<float> kLabels = {0, 1, 3, 2, 1, 0};

std::unique_ptr<Layer> make_loss(const std::string& extra) {
  LayerParameter param;
  read_proto_from_text_string("name: 'loss' type: 'SoftmaxWithLoss' " + extra, &param);
  return testing::create_layer(param);
}

struct Fixture {
  Blob scores{std::vector<int>{kNum, kClasses, 1, kInner}};
  Blob labels{std::vector<int>{kNum, 1, 1, kInner}};
  Blob loss;
  Fixture() {
    RandomStream random(31);
    random.uniform(scores.count(), -2.0f, 2.0f, scores.mutable_cpu_data());
    std::copy(kLabels.begin(), kLabels.end(), labels.mutable_cpu_data());
  }
  BlobVec bottom() { return {&scores, &labels}; }
  BlobVec top() { return {&loss}; }
};

double naive_probability(const Blob& scores, int n, int c, int i) {
  double sum = 0;
  for (int k = 0; k < kClasses; ++k)
    sum += std::exp(double(scores.cpu_data()[(n * kClasses + k) * kInner + i]));
  return std::exp(double(scores.cpu_data()[(n * kClasses + c) * kInner + i])) / sum;
}

// Sum of -log p(label) over positions whose label is not `ignore` (pass -100
// for none), and how many there were.
double naive_loss_sum(const Blob& scores, int ignore, int* valid) {
  double sum = 0;
  *valid = 0;
  for (int n = 0; n < kNum; ++n) {
    for (int i = 0; i < kInner; ++i) {
      const int label = static_cast<int>(kLabels[n * kInner + i]);
      if (label == ignore) continue;
      sum -= std::log(std::max(naive_probability(scores, n, label, i), double(FLT_MIN)));
      ++*valid;
    }
  }
  return sum;
}

class SoftmaxWithLossNormalizationTest : public testing::DeviceTestWithParam<NormalizationCase> {};

TEST_P(SoftmaxWithLossNormalizationTest, LossMatchesHandComputation) {
  Fixture f;
  auto layer = make_loss(GetParam().loss_param);
  layer->setup(f.bottom(), f.top());
  const float weighted = layer->forward(f.bottom(), f.top());
  int valid = 0;
  const double sum = naive_loss_sum(f.scores, GetParam().ignore, &valid);
  const double expected = sum / GetParam().normalizer(valid);
  EXPECT_EQ(f.loss.count(), 1u);
  EXPECT_EQ(f.loss.num_axes(), 0);
  EXPECT_NEAR(f.loss.cpu_data()[0], expected, 1e-5 * std::max(1.0, expected));
  // Default loss weight 1: forward() returns the loss itself.
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  EXPECT_FLOAT_EQ(weighted, f.loss.cpu_data()[0]);
}

TEST_P(SoftmaxWithLossNormalizationTest, GradientMatchesFiniteDifferences) {
  Fixture f;
  auto layer = make_loss(GetParam().loss_param);
  layer->setup(f.bottom(), f.top());
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, f.bottom(), f.top());
}

TEST_P(SoftmaxWithLossNormalizationTest, OnlyIgnoredPositionsGetNoGradient) {
  Fixture f;
  auto layer = make_loss(GetParam().loss_param);
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  layer->backward(f.top(), {true, false}, f.bottom());
  for (int n = 0; n < kNum; ++n) {
    for (int i = 0; i < kInner; ++i) {
      const bool ignored = kLabels[n * kInner + i] == GetParam().ignore;
      double magnitude = 0;
      for (int c = 0; c < kClasses; ++c) {
        magnitude += std::fabs(f.scores.cpu_diff()[(n * kClasses + c) * kInner + i]);
      }
      if (ignored) {
        EXPECT_EQ(magnitude, 0.0) << n << "," << i;
      } else {
        EXPECT_GT(magnitude, 0.0) << n << "," << i;
      }
    }
  }
}

// gtest prints parameters in test listings (and CTest names); show the name.
double six(int) { return 6; }
double three(int) { return 3; }

XTRAIN_INSTANTIATE_ON_DEVICES(
    SoftmaxWithLossNormalizationTest,
    ::testing::Values(
        NormalizationCase{"DefaultIsValid", "", -100, valid_count},
        NormalizationCase{"Full", "loss_param { normalization: FULL ignore_label: 1 }", 1, six},
        NormalizationCase{"Valid", "loss_param { normalization: VALID ignore_label: 1 }", 1,
                          valid_count},
        NormalizationCase{"BatchSize", "loss_param { normalization: BATCH_SIZE }", -100, three},
        NormalizationCase{"BatchSizeIgnoring",
                          "loss_param { normalization: BATCH_SIZE ignore_label: 0 }", 0, three},
        NormalizationCase{"None", "loss_param { normalization: NONE ignore_label: 3 }", 3, one},
        NormalizationCase{"LegacyNormalizeFalse", "loss_param { normalize: false }", -100, three},
        NormalizationCase{"LegacyNormalizeTrue", "loss_param { normalize: true ignore_label: 1 }",
                          1, valid_count},
        NormalizationCase{"NormalizationWinsOverNormalize",
                          "loss_param { normalize: false normalization: FULL }", -100, six}),
    [](const ::testing::TestParamInfo<NormalizationCase>& param_info) {
      return std::string(param_info.param.name);
    });

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, HandComputedTwoClassLoss) {
  // One sample, scores (0, ln 3): p = (1/4, 3/4); label 1 -> loss = -ln(3/4).
  Blob scores({1, 2});
  scores.mutable_cpu_data()[0] = 0.0f;
  scores.mutable_cpu_data()[1] = std::log(3.0f);
  Blob labels({1});
  labels.mutable_cpu_data()[0] = 1;
  Blob loss;
  auto layer = make_loss("");
  layer->setup({&scores, &labels}, {&loss});
  layer->forward({&scores, &labels}, {&loss});
  EXPECT_NEAR(loss.cpu_data()[0], -std::log(0.75), 1e-6);
  layer->backward({&loss}, {true, false}, {&scores, &labels});
  EXPECT_NEAR(scores.cpu_diff()[0], 0.25, 1e-6);
  EXPECT_NEAR(scores.cpu_diff()[1], 0.75 - 1.0, 1e-6);
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, AllIgnoredGivesZeroLossAndGradient) {
  Fixture f;
  for (std::size_t i = 0; i < f.labels.count(); ++i) f.labels.mutable_cpu_data()[i] = 7;
  auto layer = make_loss("loss_param { ignore_label: 7 }");
  layer->setup(f.bottom(), f.top());
  layer->forward(f.bottom(), f.top());
  EXPECT_EQ(f.loss.cpu_data()[0], 0.0f);
  layer->backward(f.top(), {true, false}, f.bottom());
  EXPECT_EQ(f.scores.asum_diff(), 0.0);
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, LossWeightScalesLossAndGradient) {
  Fixture plain, weighted;
  auto unit = make_loss("");
  auto doubled = make_loss("loss_weight: 2.5");
  unit->setup(plain.bottom(), plain.top());
  doubled->setup(weighted.bottom(), weighted.top());
  const float unit_loss = unit->forward(plain.bottom(), plain.top());
  const float doubled_loss = doubled->forward(weighted.bottom(), weighted.top());
  EXPECT_FLOAT_EQ(doubled_loss, 2.5f * unit_loss);
  unit->backward(plain.top(), {true, false}, plain.bottom());
  doubled->backward(weighted.top(), {true, false}, weighted.bottom());
  for (std::size_t i = 0; i < plain.scores.count(); ++i) {
    EXPECT_FLOAT_EQ(weighted.scores.cpu_diff()[i], 2.5f * plain.scores.cpu_diff()[i]);
  }
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, SecondTopIsTheProbabilityWithWeightZero) {
  Fixture f;
  Blob prob;
  auto layer = make_loss("top: 'loss' top: 'prob'");
  layer->setup(f.bottom(), {&f.loss, &prob});
  EXPECT_FLOAT_EQ(layer->loss(0), 1.0f);
  EXPECT_FLOAT_EQ(layer->loss(1), 0.0f);
  const float total = layer->forward(f.bottom(), {&f.loss, &prob});
  EXPECT_FLOAT_EQ(total, f.loss.cpu_data()[0]);
  ASSERT_EQ(prob.shape(), f.scores.shape());
  for (int n = 0; n < kNum; ++n) {
    for (int c = 0; c < kClasses; ++c) {
      for (int i = 0; i < kInner; ++i) {
        EXPECT_NEAR(prob.cpu_data()[(n * kClasses + c) * kInner + i],
                    naive_probability(f.scores, n, c, i), 1e-6);
      }
    }
  }
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, SoftmaxAxisIsHonoured) {
  // Classes on the last axis: scores 2 x 3 x 5, labels 2 x 3.
  Blob scores({2, 3, 5});
  Blob labels({2, 3});
  RandomStream random(32);
  random.uniform(scores.count(), -1.0f, 1.0f, scores.mutable_cpu_data());
  const float values[] = {0, 4, 2, 1, 3, 0};
  std::copy_n(values, 6, labels.mutable_cpu_data());
  Blob loss;
  auto layer = make_loss("softmax_param { axis: -1 }");
  layer->setup({&scores, &labels}, {&loss});
  layer->forward({&scores, &labels}, {&loss});
  double expected = 0;
  for (int row = 0; row < 6; ++row) {
    double sum = 0;
    for (int c = 0; c < 5; ++c) sum += std::exp(double(scores.cpu_data()[row * 5 + c]));
    expected -= std::log(std::exp(double(scores.cpu_data()[row * 5 + int(values[row])])) / sum);
  }
  EXPECT_NEAR(loss.cpu_data()[0], expected / 6, 1e-5);
  testing::GradientCheckOptions options;
  options.bottoms_to_check = {0};
  testing::GradientChecker(options).check(*layer, {&scores, &labels}, {&loss});
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, LabelOutOfRangeNamesLayerLabelAndClasses) {
  Fixture f;
  f.labels.mutable_cpu_data()[3] = 4;  // classes are 0..3
  auto layer = make_loss("");
  layer->setup(f.bottom(), f.top());
  const std::string message = error_of([&] { layer->forward(f.bottom(), f.top()); });
  EXPECT_NE(message.find("layer 'loss' (SoftmaxWithLoss)"), std::string::npos) << message;
  EXPECT_NE(message.find("label 4"), std::string::npos) << message;
  EXPECT_NE(message.find("4 classes"), std::string::npos) << message;
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, NegativeLabelIsAnErrorUnlessIgnored) {
  Fixture f;
  f.labels.mutable_cpu_data()[0] = -1;
  auto strict = make_loss("");
  strict->setup(f.bottom(), f.top());
  EXPECT_THROW(strict->forward(f.bottom(), f.top()), Error);
  auto lenient = make_loss("loss_param { ignore_label: -1 }");
  lenient->setup(f.bottom(), f.top());
  EXPECT_NO_THROW(lenient->forward(f.bottom(), f.top()));
}

TEST(SoftmaxWithLossLayerTest, LabelCountMismatchNamesBothShapes) {
  Blob scores({3, 4, 1, 2});
  Blob labels({3, 1});  // needs 3 * 2 = 6 labels
  Blob loss;
  auto layer = make_loss("");
  const std::string message = error_of([&] { layer->setup({&scores, &labels}, {&loss}); });
  EXPECT_NE(message.find("layer 'loss' (SoftmaxWithLoss)"), std::string::npos) << message;
  EXPECT_NE(message.find(scores.shape_string()), std::string::npos) << message;
  EXPECT_NE(message.find(labels.shape_string()), std::string::npos) << message;
}

XTRAIN_DEVICE_TEST(SoftmaxWithLossLayerTest, RefusesToBackpropagateToLabels) {
  Fixture f;
  auto layer = make_loss("");
  layer->setup(f.bottom(), f.top());
  EXPECT_FALSE(layer->allow_force_backward(1));
  EXPECT_TRUE(layer->allow_force_backward(0));
  layer->forward(f.bottom(), f.top());
  const std::string message = error_of([&] { layer->backward(f.top(), {true, true}, f.bottom()); });
  EXPECT_NE(message.find("cannot backpropagate"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain

// ReLU, Sigmoid and TanH: forward against the textbook formulas, gradients
// against finite differences, and in-place use.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/random.hpp"

namespace xtrain {
namespace {

std::unique_ptr<Layer> make_layer(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  return testing::create_layer(param);
}

void fill_uniform(Blob& blob, float low, float high, std::uint64_t seed) {
  RandomStream random(seed);
  random.uniform(blob.count(), low, high, blob.mutable_cpu_data());
}

struct ActivationCase {
  std::string prototxt;
  float (*reference)(float);
  // Finite differences are meaningless across a kink (ReLU at 0).
  bool has_kink_at_zero;
};

float relu(float x) { return x > 0 ? x : 0.0f; }
float leaky_relu(float x) { return x > 0 ? x : 0.1f * x; }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float tanh_reference(float x) { return std::tanh(x); }

class ActivationLayerTest : public testing::DeviceTestWithParam<ActivationCase> {};

TEST_P(ActivationLayerTest, ForwardMatchesFormula) {
  Blob bottom({2, 3, 4, 5});
  Blob top;
  fill_uniform(bottom, -4.0f, 4.0f, 11);
  auto layer = make_layer(GetParam().prototxt);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  for (std::size_t i = 0; i < bottom.count(); ++i) {
    EXPECT_NEAR(top.cpu_data()[i], GetParam().reference(bottom.cpu_data()[i]), 1e-6f) << i;
  }
}

TEST_P(ActivationLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 4, 5});
  Blob top;
  fill_uniform(bottom, -3.0f, 3.0f, 12);
  auto layer = make_layer(GetParam().prototxt);
  layer->setup({&bottom}, {&top});
  testing::GradientCheckOptions options;
  if (GetParam().has_kink_at_zero) options.kink_range = 0.02f;
  testing::GradientChecker(options).check(*layer, {&bottom}, {&top});
}

TEST_P(ActivationLayerTest, InPlaceGivesTheSameForwardAndBackward) {
  Blob input({3, 7});
  fill_uniform(input, -2.0f, 2.0f, 13);
  // Keep values away from 0, where ReLU's in-place backward is ambiguous.
  for (std::size_t i = 0; i < input.count(); ++i) {
    float& v = input.mutable_cpu_data()[i];
    if (std::fabs(v) < 0.05f) v = 0.5f;
  }
  Blob top_diff({3, 7});
  fill_uniform(top_diff, -1.0f, 1.0f, 14);

  Blob bottom;
  bottom.reshape_like(input);
  std::copy_n(input.cpu_data(), input.count(), bottom.mutable_cpu_data());
  Blob top;
  auto separate = make_layer(GetParam().prototxt);
  separate->setup({&bottom}, {&top});
  separate->forward({&bottom}, {&top});
  std::copy_n(top_diff.cpu_data(), top_diff.count(), top.mutable_cpu_diff());
  separate->backward({&top}, {true}, {&bottom});

  Blob shared;
  shared.reshape_like(input);
  std::copy_n(input.cpu_data(), input.count(), shared.mutable_cpu_data());
  auto in_place = make_layer(GetParam().prototxt);
  in_place->setup({&shared}, {&shared});
  in_place->forward({&shared}, {&shared});
  for (std::size_t i = 0; i < input.count(); ++i) {
    EXPECT_FLOAT_EQ(shared.cpu_data()[i], top.cpu_data()[i]) << i;
  }
  std::copy_n(top_diff.cpu_data(), top_diff.count(), shared.mutable_cpu_diff());
  in_place->backward({&shared}, {true}, {&shared});
  for (std::size_t i = 0; i < input.count(); ++i) {
    EXPECT_FLOAT_EQ(shared.cpu_diff()[i], bottom.cpu_diff()[i]) << i;
  }
}

TEST_P(ActivationLayerTest, NoPropagateDownLeavesBottomDiffAlone) {
  Blob bottom({4});
  Blob top;
  fill_uniform(bottom, -1.0f, 1.0f, 15);
  for (std::size_t i = 0; i < 4; ++i) bottom.mutable_cpu_diff()[i] = 42.0f;
  auto layer = make_layer(GetParam().prototxt);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  layer->backward({&top}, {false}, {&bottom});
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(bottom.cpu_diff()[i], 42.0f);
}

XTRAIN_INSTANTIATE_ON_DEVICES(
    ActivationLayerTest,
    ::testing::Values(ActivationCase{"name: 'relu' type: 'ReLU'", relu, true},
                      ActivationCase{
                          "name: 'leaky' type: 'ReLU' relu_param { negative_slope: 0.1 }",
                          leaky_relu, true},
                      ActivationCase{"name: 'sigmoid' type: 'Sigmoid'", sigmoid, false},
                      ActivationCase{"name: 'tanh' type: 'TanH'", tanh_reference, false}),
    [](const ::testing::TestParamInfo<ActivationCase>& param_info) {
      return std::string(param_info.index == 0   ? "ReLU"
                         : param_info.index == 1 ? "LeakyReLU"
                         : param_info.index == 2 ? "Sigmoid"
                                                 : "TanH");
    });

XTRAIN_DEVICE_TEST(ReLULayerTest, HandComputedValuesAndGradient) {
  Blob bottom({5});
  const float values[] = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
  std::copy_n(values, 5, bottom.mutable_cpu_data());
  Blob top;
  auto layer = make_layer("name: 'r' type: 'ReLU' relu_param { negative_slope: 0.25 }");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  const float expected[] = {-0.5f, -0.125f, 0.0f, 0.5f, 3.0f};
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(top.cpu_data()[i], expected[i]);
  for (int i = 0; i < 5; ++i) top.mutable_cpu_diff()[i] = 2.0f;
  layer->backward({&top}, {true}, {&bottom});
  // At x = 0 the slope side applies (dy/dx = negative_slope), as in Caffe.
  const float expected_diff[] = {0.5f, 0.5f, 0.5f, 2.0f, 2.0f};
  for (int i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(bottom.cpu_diff()[i], expected_diff[i]);
}

XTRAIN_DEVICE_TEST(SigmoidLayerTest, StaysFiniteForLargeInputs) {
  Blob bottom({2});
  bottom.mutable_cpu_data()[0] = -200.0f;
  bottom.mutable_cpu_data()[1] = 200.0f;
  Blob top;
  auto layer = make_layer("name: 's' type: 'Sigmoid'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_EQ(top.cpu_data()[0], 0.0f);
  EXPECT_EQ(top.cpu_data()[1], 1.0f);
}

}  // namespace
}  // namespace xtrain

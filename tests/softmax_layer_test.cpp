// Softmax: forward against a naive per-position implementation for several
// axes, gradients against finite differences, in-place use, and large inputs.
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

std::unique_ptr<Layer> make_softmax(int axis) {
  LayerParameter param;
  read_proto_from_text_string(
      "name: 'prob' type: 'Softmax' softmax_param { axis: " + std::to_string(axis) + " }", &param);
  return testing::create_layer(param);
}

// Softmax of x along `axis`, one position at a time, in double.
std::vector<float> naive_softmax(const Blob& x, int axis) {
  const int a = x.canonical_axis_index(axis);
  const std::size_t outer = x.count(0, a);
  const std::size_t channels = x.shape(a);
  const std::size_t inner = x.count(a + 1);
  std::vector<float> y(x.count());
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (std::size_t c = 0; c < channels; ++c) {
        sum += std::exp(static_cast<double>(x.cpu_data()[(o * channels + c) * inner + i]));
      }
      for (std::size_t c = 0; c < channels; ++c) {
        const std::size_t k = (o * channels + c) * inner + i;
        y[k] = static_cast<float>(std::exp(static_cast<double>(x.cpu_data()[k])) / sum);
      }
    }
  }
  return y;
}

void fill_uniform(Blob& blob, float low, float high, std::uint64_t seed) {
  RandomStream random(seed);
  random.uniform(blob.count(), low, high, blob.mutable_cpu_data());
}

class SoftmaxAxisTest : public testing::DeviceTestWithParam<int> {};

TEST_P(SoftmaxAxisTest, ForwardMatchesNaive) {
  Blob bottom({2, 5, 3, 4});
  Blob top;
  fill_uniform(bottom, -3.0f, 3.0f, 21);
  auto layer = make_softmax(GetParam());
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  ASSERT_EQ(top.shape(), bottom.shape());
  const std::vector<float> expected = naive_softmax(bottom, GetParam());
  for (std::size_t i = 0; i < top.count(); ++i) EXPECT_NEAR(top.cpu_data()[i], expected[i], 1e-6f);
}

TEST_P(SoftmaxAxisTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 2, 3});
  Blob top;
  fill_uniform(bottom, -2.0f, 2.0f, 22);
  auto layer = make_softmax(GetParam());
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_INSTANTIATE_ON_DEVICES(SoftmaxAxisTest, ::testing::Values(0, 1, 2, -1));

XTRAIN_DEVICE_TEST(SoftmaxLayerTest, HandComputedRow) {
  Blob bottom({1, 3});
  const float x[] = {1.0f, 2.0f, 3.0f};
  std::copy_n(x, 3, bottom.mutable_cpu_data());
  Blob top;
  auto layer = make_softmax(1);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  const double sum = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(top.cpu_data()[c], std::exp(c + 1.0) / sum, 1e-7);
  // dx = (dy - sum(dy * y)) * y, with dy = (1, 0, 0).
  top.mutable_cpu_diff()[0] = 1;
  top.mutable_cpu_diff()[1] = 0;
  top.mutable_cpu_diff()[2] = 0;
  layer->backward({&top}, {true}, {&bottom});
  const float y0 = top.cpu_data()[0];
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(bottom.cpu_diff()[c], ((c == 0 ? 1.0f : 0.0f) - y0) * top.cpu_data()[c], 1e-7);
  }
}

XTRAIN_DEVICE_TEST(SoftmaxLayerTest, LargeInputsDoNotOverflow) {
  Blob bottom({1, 2});
  bottom.mutable_cpu_data()[0] = 1000.0f;
  bottom.mutable_cpu_data()[1] = 999.0f;
  Blob top;
  auto layer = make_softmax(1);
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_NEAR(top.cpu_data()[0], 1.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(top.cpu_data()[1], 1.0 / (1.0 + std::exp(1.0)), 1e-6);
}

XTRAIN_DEVICE_TEST(SoftmaxLayerTest, InPlaceMatchesSeparate) {
  Blob bottom({2, 4, 3});
  fill_uniform(bottom, -2.0f, 2.0f, 23);
  Blob shared({2, 4, 3});
  std::copy_n(bottom.cpu_data(), bottom.count(), shared.mutable_cpu_data());
  Blob top;
  auto separate = make_softmax(1);
  separate->setup({&bottom}, {&top});
  separate->forward({&bottom}, {&top});
  auto in_place = make_softmax(1);
  in_place->setup({&shared}, {&shared});
  in_place->forward({&shared}, {&shared});
  RandomStream random(24);
  random.uniform(top.count(), -1.0f, 1.0f, top.mutable_cpu_diff());
  std::copy_n(top.cpu_diff(), top.count(), shared.mutable_cpu_diff());
  separate->backward({&top}, {true}, {&bottom});
  in_place->backward({&shared}, {true}, {&shared});
  for (std::size_t i = 0; i < top.count(); ++i) {
    EXPECT_FLOAT_EQ(shared.cpu_data()[i], top.cpu_data()[i]);
    EXPECT_FLOAT_EQ(shared.cpu_diff()[i], bottom.cpu_diff()[i]);
  }
}

}  // namespace
}  // namespace xtrain

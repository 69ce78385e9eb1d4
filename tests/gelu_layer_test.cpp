// GELU (xtrain's, beyond Caffe's set): y = x Phi(x) against the formula in
// double (PyTorch's exact nn.GELU), its gradient against the derivative and
// finite differences, and in place.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_gradient(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
         x * std::exp(-0.5 * x * x) / std::sqrt(2 * 3.14159265358979323846);
}

XTRAIN_DEVICE_TEST(GeluLayerTest, ForwardAndBackwardByTheFormula) {
  Blob bottom({6});
  Blob top;
  const std::vector<float> x = {-4.0f, -1.5f, -0.25f, 0.0f, 0.75f, 3.0f};
  set_data(bottom, x);
  auto layer = make_layer("name: 'gelu' type: 'GELU'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  set_diff(top, {1, 2, 1, 1, -1, 0.5f});
  layer->backward({&top}, {true}, {&bottom});
  const std::vector<float> dy = {1, 2, 1, 1, -1, 0.5f};
  std::vector<float> y, dx;
  for (std::size_t i = 0; i < x.size(); ++i) {
    y.push_back(static_cast<float>(gelu(x[i])));
    dx.push_back(static_cast<float>(dy[i] * gelu_gradient(x[i])));
  }
  expect_near_all(data_of(top), y, 1e-6f);
  expect_near_all(diff_of(bottom), dx, 1e-6f);
  // Known values: GELU(1) = 0.8413447, GELU(-1) = -0.1586553.
  set_data(bottom, {1, -1, 0, 0, 0, 0});
  layer->forward({&bottom}, {&top});
  EXPECT_NEAR(top.cpu_data()[0], 0.8413447f, 1e-6f);
  EXPECT_NEAR(top.cpu_data()[1], -0.1586553f, 1e-6f);
}

XTRAIN_DEVICE_TEST(GeluLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 4});
  Blob top;
  testing::fill_uniform(bottom, 41, -4.0f, 4.0f);
  auto layer = make_layer("name: 'gelu' type: 'GELU'");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(GeluLayerTest, InPlaceGivesTheSameResults) {
  Blob input({3, 5});
  testing::fill_uniform(input, 42, -3.0f, 3.0f);
  Blob top_diff({3, 5});
  testing::fill_uniform(top_diff, 43);
  testing::expect_in_place_matches_separate("name: 'gelu' type: 'GELU'", input, top_diff);
}

}  // namespace
}  // namespace xtrain

// Swish: y = x sigmoid(beta x) and its gradient against the formula in
// double, finite differences, the default beta, and in place.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

double swish(double x, double beta) { return x / (1 + std::exp(-beta * x)); }
double swish_gradient(double x, double beta) {
  const double s = 1 / (1 + std::exp(-beta * x));
  return s + beta * x * s * (1 - s);
}

XTRAIN_DEVICE_TEST(SwishLayerTest, ForwardAndBackwardByTheFormula) {
  for (const float beta : {1.0f, 2.0f, 0.5f}) {
    Blob bottom({5});
    Blob top;
    const std::vector<float> x = {-3.0f, -1.0f, 0.0f, 1.0f, 2.5f};
    set_data(bottom, x);
    auto layer = make_layer(
        "name: 'swish' type: 'Swish' swish_param { beta: " + std::to_string(beta) + " }");
    layer->setup({&bottom}, {&top});
    layer->forward({&bottom}, {&top});
    set_diff(top, {1, 1, 1, 1, 1});
    layer->backward({&top}, {true}, {&bottom});
    std::vector<float> y, dx;
    for (float v : x) {
      y.push_back(static_cast<float>(swish(v, beta)));
      dx.push_back(static_cast<float>(swish_gradient(v, beta)));
    }
    expect_near_all(data_of(top), y, 1e-6f);
    expect_near_all(diff_of(bottom), dx, 1e-6f);
  }
}

XTRAIN_DEVICE_TEST(SwishLayerTest, DefaultBetaIsOne) {
  Blob bottom({1});
  Blob top;
  set_data(bottom, {1.0f});
  auto layer = make_layer("name: 'swish' type: 'Swish'");
  layer->setup({&bottom}, {&top});
  layer->forward({&bottom}, {&top});
  EXPECT_NEAR(top.cpu_data()[0], 0.7310586f, 1e-6f);  // 1 * sigmoid(1)
}

XTRAIN_DEVICE_TEST(SwishLayerTest, GradientMatchesFiniteDifferences) {
  Blob bottom({2, 3, 4});
  Blob top;
  testing::fill_uniform(bottom, 32, -4.0f, 4.0f);
  auto layer = make_layer("name: 'swish' type: 'Swish' swish_param { beta: 1.5 }");
  layer->setup({&bottom}, {&top});
  testing::GradientChecker().check(*layer, {&bottom}, {&top});
}

XTRAIN_DEVICE_TEST(SwishLayerTest, InPlaceGivesTheSameResults) {
  const char* prototxt = "name: 'swish' type: 'Swish' swish_param { beta: 0.7 }";
  Blob input({3, 5});
  testing::fill_uniform(input, 33, -3.0f, 3.0f);
  Blob top_diff({3, 5});
  testing::fill_uniform(top_diff, 34);
  testing::expect_in_place_matches_separate(prototxt, input, top_diff);
}

}  // namespace
}  // namespace xtrain

// Eltwise: SUM with coefficients, PROD, MAX (with Caffe's tie rule), both
// PROD gradient formulas, gradients of every bottom, and bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

class EltwiseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      inputs_[i].reshape({2, 3, 2, 2});
      fill_uniform(inputs_[i], 10 + i);
    }
  }
  BlobVec bottoms() { return {&inputs_[0], &inputs_[1], &inputs_[2]}; }

  Blob inputs_[3];
  Blob output_;
};

XTRAIN_DEVICE_TEST_F(EltwiseTest, SumDefaultsToPlainSum) {
  auto layer = make_layer("name: 'e' type: 'Eltwise'");
  layer->setup(bottoms(), {&output_});
  layer->forward(bottoms(), {&output_});
  for (std::size_t j = 0; j < output_.count(); ++j) {
    ASSERT_NEAR(output_.cpu_data()[j],
                inputs_[0].cpu_data()[j] + inputs_[1].cpu_data()[j] + inputs_[2].cpu_data()[j],
                1e-6f);
  }
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, SumWithCoefficientsByHand) {
  Blob a({2}), b({2});
  set_data(a, {1, 2});
  set_data(b, {10, 20});
  auto layer =
      make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 }");
  layer->setup({&a, &b}, {&output_});
  layer->forward({&a, &b}, {&output_});
  expect_near_all(data_of(output_), {-4, -8}, 0);
  std::fill(output_.mutable_cpu_diff(), output_.mutable_cpu_diff() + 2, 2.0f);
  layer->backward({&output_}, {true, true}, {&a, &b});
  expect_near_all(diff_of(a), {2, 2}, 0);
  expect_near_all(diff_of(b), {-1, -1}, 0);
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, ProdAndMaxByHand) {
  Blob a({4}), b({4}), c({4});
  set_data(a, {1, 5, -2, 3});
  set_data(b, {2, 5, -1, 3});
  set_data(c, {0.5f, 1, -3, 3});
  auto prod = make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }");
  prod->setup({&a, &b, &c}, {&output_});
  prod->forward({&a, &b, &c}, {&output_});
  expect_near_all(data_of(output_), {1, 25, -6, 27}, 0);

  auto max = make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }");
  max->setup({&a, &b, &c}, {&output_});
  max->forward({&a, &b, &c}, {&output_});
  expect_near_all(data_of(output_), {2, 5, -1, 3}, 0);
  std::fill(output_.mutable_cpu_diff(), output_.mutable_cpu_diff() + 4, 1.0f);
  max->backward({&output_}, {true, true, true}, {&a, &b, &c});
  // Element 1: a tie of bottoms 0 and 1 goes to bottom 1; element 3: a three-
  // way tie stays with bottom 1 (a later bottom must be strictly greater).
  expect_near_all(diff_of(a), {0, 0, 0, 0}, 0);
  expect_near_all(diff_of(b), {1, 1, 1, 1}, 0);
  expect_near_all(diff_of(c), {0, 0, 0, 0}, 0);
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, GradientSum) {
  auto layer =
      make_layer("name: 'e' type: 'Eltwise' eltwise_param { coeff: 1 coeff: -2 coeff: 0.5 }");
  layer->setup(bottoms(), {&output_});
  testing::GradientChecker().check(*layer, bottoms(), {&output_});
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, GradientProdStableAndUnstable) {
  for (const char* stable : {"true", "false"}) {
    SCOPED_TRACE(std::string("stable_prod_grad: ") + stable);
    auto layer = make_layer(std::string("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD "
                                        "stable_prod_grad: ") +
                            stable + " }");
    layer->setup(bottoms(), {&output_});
    // The unstable formula divides by the bottom: keep away from 0.
    testing::GradientCheckOptions options;
    options.kink_range = 0.05f;
    testing::GradientChecker(options).check(*layer, bottoms(), {&output_});
  }
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, UnstableProdGradientDividesByZeroAsCaffe) {
  Blob a({1}), b({1});
  set_data(a, {0});
  set_data(b, {3});
  auto layer = make_layer(
      "name: 'e' type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }");
  layer->setup({&a, &b}, {&output_});
  layer->forward({&a, &b}, {&output_});
  output_.mutable_cpu_diff()[0] = 1;
  layer->backward({&output_}, {true, false}, {&a, &b});
  EXPECT_TRUE(std::isnan(a.cpu_diff()[0]));  // 0 / 0
  auto stable = make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }");
  stable->setup({&a, &b}, {&output_});
  stable->forward({&a, &b}, {&output_});
  stable->backward({&output_}, {true, false}, {&a, &b});
  EXPECT_EQ(a.cpu_diff()[0], 3.0f);
}

XTRAIN_DEVICE_TEST_F(EltwiseTest, GradientMax) {
  auto layer = make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }");
  layer->setup(bottoms(), {&output_});
  // Random inputs have no ties; a step of 1e-3 keeps the winner fixed.
  testing::GradientCheckOptions options;
  options.step = 1e-3f;
  options.threshold = 1e-2f;
  testing::GradientChecker(options).check(*layer, bottoms(), {&output_});
}

TEST_F(EltwiseTest, RejectsMismatchedShapesAndBadCoefficients) {
  Blob other({2, 3, 2, 3});
  expect_error(
      [&] {
        make_layer("name: 'e' type: 'Eltwise'")->setup({&inputs_[0], &other}, {&output_});
      },
      {"layer 'e' (Eltwise)", "2 3 2 2 (24)", "2 3 2 3 (36)"});
  expect_error(
      [&] {
        make_layer("name: 'e' type: 'Eltwise' eltwise_param { coeff: 1 }")
            ->setup(bottoms(), {&output_});
      },
      {"layer 'e' (Eltwise)", "1 coeff", "3 bottoms"});
  expect_error(
      [&] {
        make_layer("name: 'e' type: 'Eltwise' eltwise_param { operation: PROD coeff: 1 coeff: 2 }")
            ->setup({&inputs_[0], &inputs_[1]}, {&output_});
      },
      {"layer 'e' (Eltwise)", "SUM only"});
  expect_error([&] { make_layer("name: 'e' type: 'Eltwise'")->setup({&inputs_[0]}, {&output_}); },
               {"layer 'e' (Eltwise)", "at least 2"});
  expect_error(
      [&] {
        make_layer("name: 'e' type: 'Eltwise'")->setup({&inputs_[0], &inputs_[1]}, {&inputs_[0]});
      },
      {"layer 'e' (Eltwise)", "in place"});
}

}  // namespace
}  // namespace xtrain

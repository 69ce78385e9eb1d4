// InnerProduct: forward against a direct matrix product (axis, transpose, no
// bias), gradients, accumulation of param diffs, preloaded weights, and a
// changed input size.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using testing::expect_error;
using testing::expect_setup_error;

LayerParameter ip_param(int num_output, int axis = 1, bool transpose = false, bool bias = true) {
  LayerParameter param;
  param.set_name("fc");
  param.set_type("InnerProduct");
  InnerProductParameter* ip = param.mutable_inner_product_param();
  ip->set_num_output(num_output);
  ip->set_axis(axis);
  ip->set_transpose(transpose);
  ip->set_bias_term(bias);
  ip->mutable_weight_filler()->set_type("uniform");
  ip->mutable_weight_filler()->set_min(-1);
  ip->mutable_weight_filler()->set_max(1);
  ip->mutable_bias_filler()->set_type("gaussian");
  return param;
}

// top[m][n] = sum_k x[m][k] * W(n, k) + b[n], W(n, k) read from either layout.
std::vector<float> direct_product(const Blob& input, int axis, const Blob& weights,
                                  const Blob* bias, bool transpose) {
  const int rows = static_cast<int>(input.count(0, axis));
  const int k_size = static_cast<int>(input.count(axis));
  const int n_size = transpose ? weights.shape(1) : weights.shape(0);
  std::vector<float> out;
  for (int m = 0; m < rows; ++m) {
    for (int n = 0; n < n_size; ++n) {
      double sum = bias ? bias->cpu_data()[n] : 0.0;
      for (int k = 0; k < k_size; ++k) {
        const float w =
            transpose ? weights.cpu_data()[k * n_size + n] : weights.cpu_data()[n * k_size + k];
        sum += static_cast<double>(input.cpu_data()[m * k_size + k]) * w;
      }
      out.push_back(static_cast<float>(sum));
    }
  }
  return out;
}

class InnerProductTest : public testing::OneInputLayerTest {
 protected:
  void check_forward(const LayerParameter& param, const std::vector<int>& input_shape,
                     const std::vector<int>& expected_top, const std::vector<int>& weight_shape) {
    SCOPED_TRACE("input " + shape_to_string(input_shape) + ", " + param.ShortDebugString());
    auto layer = make(param, input_shape);
    ASSERT_EQ(output_.shape(), expected_top);
    ASSERT_EQ(layer->blobs()[0]->shape(), weight_shape);
    const bool bias = param.inner_product_param().bias_term();
    ASSERT_EQ(layer->blobs().size(), bias ? 2u : 1u);
    layer->forward({&input_}, {&output_});
    const auto expected = direct_product(
        input_, input_.canonical_axis_index(param.inner_product_param().axis()), *layer->blobs()[0],
        bias ? layer->blobs()[1].get() : nullptr, param.inner_product_param().transpose());
    ASSERT_EQ(expected.size(), output_.count());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(output_.cpu_data()[i], expected[i], 1e-4f) << "element " << i;
    }
  }
};

XTRAIN_DEVICE_TEST_F(InnerProductTest, ForwardFlattensFromAxisOne) {
  check_forward(ip_param(5), {2, 3, 2, 2}, {2, 5}, {5, 12});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, ForwardTransposed) {
  check_forward(ip_param(4, 1, true), {3, 6}, {3, 4}, {6, 4});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, ForwardOtherAxesAndNoBias) {
  check_forward(ip_param(3, 2), {2, 3, 4}, {2, 3, 3}, {3, 4});
  check_forward(ip_param(3, -1, false, false), {2, 3, 4}, {2, 3, 3}, {3, 4});
  check_forward(ip_param(2, 0, true), {2, 3}, {2}, {6, 2});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, HandComputed) {
  LayerParameter param = ip_param(2);
  Blob weights({2, 3});
  const float w[] = {1, 2, 3, -1, 0, 1};
  std::copy(w, w + 6, weights.mutable_cpu_data());
  Blob bias({2});
  bias.mutable_cpu_data()[0] = 0.5f;
  bias.mutable_cpu_data()[1] = -1.0f;
  weights.to_proto(param.add_blobs());
  bias.to_proto(param.add_blobs());
  auto layer = make(param, {2, 3});
  const float x[] = {1, 1, 1, 2, 0, -1};
  std::copy(x, x + 6, input_.mutable_cpu_data());
  layer->forward({&input_}, {&output_});
  EXPECT_EQ(std::vector<float>(output_.cpu_data(), output_.cpu_data() + 4),
            (std::vector<float>{6.5f, -1.0f, -0.5f, -4.0f}));
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, Gradient) {
  auto layer = make(ip_param(3), {2, 2, 2, 2});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, GradientTransposed) {
  auto layer = make(ip_param(3, 1, true), {3, 4});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, GradientAxisTwoWithoutBias) {
  auto layer = make(ip_param(2, 2, false, false), {2, 2, 3});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, ParamGradientsAccumulate) {
  auto layer = make(ip_param(3), {2, 4});
  layer->forward({&input_}, {&output_});
  testing::fill_uniform(output_, 5);
  std::copy(output_.cpu_data(), output_.cpu_data() + output_.count(), output_.mutable_cpu_diff());
  for (auto& blob : layer->blobs()) blob->scale_diff(0.0f);
  layer->backward({&output_}, {true}, {&input_});
  const std::vector<float> weight_once(layer->blobs()[0]->cpu_diff(),
                                       layer->blobs()[0]->cpu_diff() + 12);
  const std::vector<float> bias_once(layer->blobs()[1]->cpu_diff(),
                                     layer->blobs()[1]->cpu_diff() + 3);
  const std::vector<float> input_once(input_.cpu_diff(), input_.cpu_diff() + 8);
  layer->backward({&output_}, {true}, {&input_});
  for (int i = 0; i < 12; ++i)
    EXPECT_FLOAT_EQ(layer->blobs()[0]->cpu_diff()[i], 2 * weight_once[i]);
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(layer->blobs()[1]->cpu_diff()[i], 2 * bias_once[i]);
  // The bottom gradient is overwritten, not accumulated.
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(input_.cpu_diff()[i], input_once[i]);
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, ReshapeKeepsKAndFollowsTheBatch) {
  auto layer = make(ip_param(3), {2, 3, 2});
  input_.reshape({5, 6});
  testing::fill_uniform(input_, 9);
  layer->forward({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{5, 3}));
  const auto expected =
      direct_product(input_, 1, *layer->blobs()[0], layer->blobs()[1].get(), false);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(output_.cpu_data()[i], expected[i], 1e-4f);
  }
}

XTRAIN_DEVICE_TEST_F(InnerProductTest, RejectsAChangedInputSize) {
  auto layer = make(ip_param(3), {2, 3, 2});
  input_.reshape({2, 7});
  expect_error([&] { layer->forward({&input_}, {&output_}); },
               {"layer 'fc' (InnerProduct)", "K = 6", "2 7", "has 7"});
}

TEST_F(InnerProductTest, PreloadedWeights) {
  // Legacy 4-d shapes (1, 1, N, K) and (1, 1, 1, N) are accepted.
  LayerParameter param = ip_param(2);
  Blob weights({1, 1, 2, 3});
  testing::fill_uniform(weights, 4);
  Blob bias({1, 1, 1, 2});
  weights.to_proto(param.add_blobs());
  bias.to_proto(param.add_blobs());
  auto layer = make(param, {4, 3});
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{2, 3}));
  EXPECT_EQ(layer->blobs()[1]->shape(), (std::vector<int>{2}));
  EXPECT_EQ(layer->blobs()[0]->cpu_data()[5], weights.cpu_data()[5]);
  EXPECT_TRUE(layer->param_propagate_down(0));
  EXPECT_TRUE(layer->param_propagate_down(1));
  expect_error(
      [&] {
        make(param, {4, 5});
      },
      {"layer 'fc' (InnerProduct)", "weight", "(1, 1, 2, 3)", "(2, 5)"});
}

TEST_F(InnerProductTest, RejectsBadParameters) {
  expect_error([&] { make(ip_param(0), {2, 3}); }, {"layer 'fc' (InnerProduct)", "num_output"});
  expect_error([&] { make(ip_param(2, 3), {2, 3}); }, {"axis 3", "2 3"});
  Blob second;
  auto layer = testing::create_layer(ip_param(2));
  expect_setup_error(*layer, {&input_, &second}, {&output_},
                     {"layer 'fc' (InnerProduct)", "exactly 1 bottom"});
}

}  // namespace
}  // namespace xtrain

// Scale and Bias: learned and bottom[1] operands on various axes (including
// scalars and num_axes -1), the bias_term of Scale, in-place use, gradients,
// gradient accumulation, and shape errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

// y[j] = x[j] * scale[d] + bias[d], d = the operand index of j: the operand's
// axes start at `axis` of the input. Written with plain index arithmetic.
std::vector<float> reference(const Blob& input, const std::vector<float>& scale,
                             const std::vector<float>& bias, int axis, int operand_axes) {
  std::size_t inner = 1;
  for (int a = axis + operand_axes; a < input.num_axes(); ++a) inner *= input.shape(a);
  const std::size_t dim = scale.empty() ? bias.size() : scale.size();
  std::vector<float> out;
  for (std::size_t j = 0; j < input.count(); ++j) {
    const std::size_t d = (j / inner) % dim;
    out.push_back(input.cpu_data()[j] * (scale.empty() ? 1.0f : scale[d]) +
                  (bias.empty() ? 0.0f : bias[d]));
  }
  return out;
}

class ScaleBiasTest : public ::testing::Test {
 protected:
  Blob input_{std::vector<int>{2, 3, 2, 4}};
  Blob operand_;
  Blob output_;

  void SetUp() override { fill_uniform(input_, 1); }
};

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, LearnedScaleDefaultsToIdentityAndScalesChannels) {
  auto layer = make_layer("name: 's' type: 'Scale'");
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(layer->blobs()[0]->shape(), std::vector<int>{3});
  layer->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), data_of(input_), 0);
  set_data(*layer->blobs()[0], {1, -2, 0.5f});
  layer->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {1, -2, 0.5f}, {}, 1, 1), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, ScaleWithBiasTermAndFillers) {
  auto layer = make_layer(
      "name: 's' type: 'Scale' scale_param { bias_term: true "
      "filler { type: 'constant' value: 2 } bias_filler { type: 'constant' value: 0.5 } }");
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 2u);
  EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{3});
  layer->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {2, 2, 2}, {0.5f, 0.5f, 0.5f}, 1, 1), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, ScaleFromBottomOverSeveralAxes) {
  operand_.reshape({3, 2});
  fill_uniform(operand_, 2);
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { bias_term: true }");
  layer->setup({&input_, &operand_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 1u);  // the bias only
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{3, 2}));
  set_data(*layer->blobs()[0], {1, 2, 3, 4, 5, 6});
  layer->forward({&input_, &operand_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, data_of(operand_), {1, 2, 3, 4, 5, 6}, 1, 2),
                  1e-6f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, ScalarScaleIgnoresTheAxis) {
  operand_.reshape(std::vector<int>{});
  set_data(operand_, {3});
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { axis: 2 }");
  layer->setup({&input_, &operand_}, {&output_});
  layer->forward({&input_, &operand_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {3}, {}, 0, 0), 1e-6f);
  auto learned = make_layer("name: 's' type: 'Scale' scale_param { num_axes: 0 }");
  learned->setup({&input_}, {&output_});
  EXPECT_EQ(learned->blobs()[0]->count(), 1u);
  EXPECT_EQ(learned->blobs()[0]->num_axes(), 0);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, AllAxesAndNegativeAxis) {
  auto all = make_layer("name: 's' type: 'Scale' scale_param { num_axes: -1 }");
  all->setup({&input_}, {&output_});
  EXPECT_EQ(all->blobs()[0]->shape(), (std::vector<int>{3, 2, 4}));
  fill_uniform(*all->blobs()[0], 3);
  all->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, data_of(*all->blobs()[0]), {}, 1, 3), 1e-6f);
  auto last = make_layer("name: 's' type: 'Scale' scale_param { axis: -1 }");
  last->setup({&input_}, {&output_});
  EXPECT_EQ(last->blobs()[0]->shape(), std::vector<int>{4});
  set_data(*last->blobs()[0], {1, 2, 3, 4});
  last->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {1, 2, 3, 4}, {}, 3, 1), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, GradientLearnedScaleAndBias) {
  auto layer = make_layer(
      "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' min: -1 "
      "max: 1 } bias_filler { type: 'uniform' min: -1 max: 1 } }");
  layer->setup({&input_}, {&output_});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, GradientScaleFromBottom) {
  operand_.reshape({2, 3});
  fill_uniform(operand_, 4);
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { axis: 0 }");
  layer->setup({&input_, &operand_}, {&output_});
  testing::GradientChecker().check(*layer, {&input_, &operand_}, {&output_});
  operand_.reshape(std::vector<int>{});
  set_data(operand_, {0.7f});
  layer->setup({&input_, &operand_}, {&output_});
  testing::GradientChecker().check(*layer, {&input_, &operand_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, ScaleInPlaceMatchesOutOfPlace) {
  const std::string text =
      "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' } "
      "bias_filler { type: 'uniform' } }";
  auto separate = make_layer(text);
  auto inplace = make_layer(text);
  separate->seed(3);
  inplace->seed(3);
  Blob shared(input_.shape());
  set_data(shared, data_of(input_));
  separate->setup({&input_}, {&output_});
  inplace->setup({&shared}, {&shared});
  separate->forward({&input_}, {&output_});
  inplace->forward({&shared}, {&shared});
  expect_near_all(data_of(shared), data_of(output_), 0);
  Blob weights(input_.shape());
  fill_uniform(weights, 9);
  std::copy(weights.cpu_data(), weights.cpu_data() + weights.count(), output_.mutable_cpu_diff());
  std::copy(weights.cpu_data(), weights.cpu_data() + weights.count(), shared.mutable_cpu_diff());
  separate->backward({&output_}, {true}, {&input_});
  inplace->backward({&shared}, {true}, {&shared});
  expect_near_all(diff_of(shared), diff_of(input_), 1e-6f);
  for (int i = 0; i < 2; ++i) {
    expect_near_all(diff_of(*inplace->blobs()[i]), diff_of(*separate->blobs()[i]), 1e-5f);
  }
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, LearnedGradientsAccumulateBottomGradientsDoNot) {
  operand_.reshape({3});
  fill_uniform(operand_, 5);
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { bias_term: true }");
  layer->setup({&input_, &operand_}, {&output_});
  layer->forward({&input_, &operand_}, {&output_});
  fill_uniform(output_, 6);
  std::copy(output_.cpu_data(), output_.cpu_data() + output_.count(), output_.mutable_cpu_diff());
  layer->blobs()[0]->scale_diff(0);
  layer->backward({&output_}, {false, true}, {&input_, &operand_});
  const auto bias_once = diff_of(*layer->blobs()[0]);
  const auto scale_once = diff_of(operand_);
  layer->backward({&output_}, {false, true}, {&input_, &operand_});
  for (std::size_t i = 0; i < bias_once.size(); ++i) {
    EXPECT_FLOAT_EQ(layer->blobs()[0]->cpu_diff()[i], 2 * bias_once[i]);
    EXPECT_FLOAT_EQ(operand_.cpu_diff()[i], scale_once[i]);
  }
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, ScaleRejectsMismatchedShapes) {
  operand_.reshape({3, 3});
  auto layer = make_layer("name: 's' type: 'Scale'");
  expect_setup_error(*layer, {&input_, &operand_}, {&output_},
                     {"layer 's' (Scale)", "bottom[1]", "3 3 (9)", "2 3 2 4 (48)", "axis 1"});
  expect_error(
      [&] {
        make_layer("name: 's' type: 'Scale' scale_param { axis: 2 num_axes: 3 }")
            ->setup({&input_}, {&output_});
      },
      {"layer 's' (Scale)", "3 axes from axis 2", "2 3 2 4"});
  expect_error(
      [&] {
        make_layer("name: 's' type: 'Scale' scale_param { num_axes: -2 }")
            ->setup({&input_}, {&output_});
      },
      {"layer 's' (Scale)", "num_axes is -2"});
  expect_error(
      [&] {
        make_layer("name: 's' type: 'Scale' scale_param { axis: 4 }")->setup({&input_}, {&output_});
      },
      {"layer 's' (Scale)", "axis 4", "out of range"});
  // The learned scale fixed at setup no longer fits a reshaped input.
  auto learned = make_layer("name: 's' type: 'Scale'");
  learned->setup({&input_}, {&output_});
  Blob other({2, 5, 2, 4});
  expect_error([&] { learned->forward({&other}, {&output_}); },
               {"layer 's' (Scale)", "the learned scale", "3 (3)", "2 5 2 4"});
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, LearnedBiasAddsAlongTheAxes) {
  auto layer = make_layer("name: 'b' type: 'Bias' bias_param { axis: 1 num_axes: 2 }");
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 1u);
  EXPECT_EQ(layer->blobs()[0]->shape(), (std::vector<int>{3, 2}));
  EXPECT_EQ(layer->blobs()[0]->asum_data(), 0.0);  // constant 0 by default
  set_data(*layer->blobs()[0], {1, 2, 3, 4, 5, 6});
  layer->forward({&input_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {}, {1, 2, 3, 4, 5, 6}, 1, 2), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, BiasFromBottomScalarAndInPlace) {
  operand_.reshape({2});
  set_data(operand_, {10, 20});
  auto layer = make_layer("name: 'b' type: 'Bias' bias_param { axis: 0 }");
  layer->setup({&input_, &operand_}, {&output_});
  EXPECT_TRUE(layer->blobs().empty());
  layer->forward({&input_, &operand_}, {&output_});
  expect_near_all(data_of(output_), reference(input_, {}, {10, 20}, 0, 1), 1e-6f);

  Blob scalar(std::vector<int>{});
  set_data(scalar, {-1});
  Blob shared(input_.shape());
  set_data(shared, data_of(input_));
  auto inplace = make_layer("name: 'b' type: 'Bias'");
  inplace->setup({&shared, &scalar}, {&shared});
  inplace->forward({&shared, &scalar}, {&shared});
  expect_near_all(data_of(shared), reference(input_, {}, {-1}, 0, 0), 1e-6f);
  std::fill(shared.mutable_cpu_diff(), shared.mutable_cpu_diff() + shared.count(), 0.5f);
  inplace->backward({&shared}, {true, true}, {&shared, &scalar});
  EXPECT_FLOAT_EQ(scalar.cpu_diff()[0], 0.5f * shared.count());
  EXPECT_FLOAT_EQ(shared.cpu_diff()[7], 0.5f);
}

XTRAIN_DEVICE_TEST_F(ScaleBiasTest, GradientBias) {
  auto learned =
      make_layer("name: 'b' type: 'Bias' bias_param { num_axes: -1 filler { type: 'uniform' } }");
  learned->setup({&input_}, {&output_});
  testing::GradientChecker().check(*learned, {&input_}, {&output_});
  operand_.reshape({3, 2});
  fill_uniform(operand_, 8);
  auto from_bottom = make_layer("name: 'b' type: 'Bias'");
  from_bottom->setup({&input_, &operand_}, {&output_});
  testing::GradientChecker().check(*from_bottom, {&input_, &operand_}, {&output_});
}

TEST_F(ScaleBiasTest, BiasRejectsMismatchedShapes) {
  operand_.reshape({4});
  expect_error(
      [&] {
        make_layer("name: 'b' type: 'Bias'")->setup({&input_, &operand_}, {&output_});
      },
      {"layer 'b' (Bias)", "bottom[1]", "4 (4)", "2 3 2 4 (48)"});
  expect_error(
      [&] {
        make_layer("name: 'b' type: 'Bias' bias_param { axis: 3 num_axes: 2 }")
            ->setup({&input_}, {&output_});
      },
      {"layer 'b' (Bias)", "2 axes from axis 3"});
}

}  // namespace
}  // namespace xtrain

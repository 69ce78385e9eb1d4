// BatchNorm: batch and stored statistics by hand, Caffe's running sums, the
// phase defaults, in-place use, gradients, the frozen ParamSpecs, and a
// solver step that leaves the statistics as forward set them; NVIDIA Caffe's
// scale_bias (a learned scale and bias per channel) likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "solver_test_net.hpp"
#include "xtrain/net.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

using namespace testing;

constexpr float kEps = 1e-5f;

std::string bn_text(const std::string& extra = "") {
  return "name: 'bn' type: 'BatchNorm' " + extra;
}

class BatchNormTest : public ::testing::Test {
 protected:
  // (N=2, C=2, 1, 2): channel 0 holds 1, 3, 5, 7 (mean 4, variance 5), channel
  // 1 holds 2 everywhere (variance 0).
  void fill_by_hand() {
    input_.reshape({2, 2, 1, 2});
    set_data(input_, {1, 3, 2, 2, 5, 7, 2, 2});
  }

  Blob input_;
  Blob output_;
};

XTRAIN_DEVICE_TEST_F(BatchNormTest, TrainingNormalisesWithBatchStatistics) {
  fill_by_hand();
  auto layer = make_layer(bn_text());
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  const float s = std::sqrt(5.0f + kEps);
  testing::expect_near_all(data_of(output_), {-3 / s, -1 / s, 0, 0, 1 / s, 3 / s, 0, 0}, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, TrainingUpdatesCaffesRunningSums) {
  fill_by_hand();
  auto layer = make_layer(bn_text("batch_norm_param { moving_average_fraction: 0.5 }"));
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 3u);
  EXPECT_EQ(layer->blobs()[0]->shape(), std::vector<int>{2});
  EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{2});
  EXPECT_EQ(layer->blobs()[2]->shape(), std::vector<int>{1});
  EXPECT_EQ(layer->blobs()[2]->cpu_data()[0], 0.0f);
  // m = 4 values per channel: the stored variance is unbiased, 5 * 4 / 3.
  layer->forward({&input_}, {&output_});
  testing::expect_near_all(data_of(*layer->blobs()[0]), {4, 2}, 1e-6f);
  testing::expect_near_all(data_of(*layer->blobs()[1]), {20.0f / 3, 0}, 1e-5f);
  EXPECT_FLOAT_EQ(layer->blobs()[2]->cpu_data()[0], 1.0f);
  // Again with f = 0.5: sums f * old + new, weight f * 1 + 1.
  layer->forward({&input_}, {&output_});
  testing::expect_near_all(data_of(*layer->blobs()[0]), {6, 3}, 1e-6f);
  testing::expect_near_all(data_of(*layer->blobs()[1]), {10, 0}, 1e-5f);
  EXPECT_FLOAT_EQ(layer->blobs()[2]->cpu_data()[0], 1.5f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, TestPhaseUsesStoredStatisticsDividedByTheWeight) {
  fill_by_hand();
  auto layer = make_layer(bn_text(), TEST);
  layer->setup({&input_}, {&output_});
  set_data(*layer->blobs()[0], {2, 4});  // sums; / 2 -> mean 1, 2
  set_data(*layer->blobs()[1], {8, 2});  // / 2 -> variance 4, 1
  set_data(*layer->blobs()[2], {2});
  layer->forward({&input_}, {&output_});
  const float s0 = std::sqrt(4.0f + kEps), s1 = std::sqrt(1.0f + kEps);
  testing::expect_near_all(data_of(output_), {0 / s0, 2 / s0, 0 / s1, 0 / s1, 4 / s0, 6 / s0, 0, 0},
                           1e-6f);
  // The statistics are not touched in this mode.
  EXPECT_EQ(layer->blobs()[2]->cpu_data()[0], 2.0f);
  // A zero weight reads as zero statistics: top = x / sqrt(eps).
  set_data(*layer->blobs()[2], {0});
  layer->forward({&input_}, {&output_});
  EXPECT_NEAR(output_.cpu_data()[1], 3 / std::sqrt(kEps), 1e-2f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, UseGlobalStatsOverridesThePhase) {
  fill_by_hand();
  auto frozen = make_layer(bn_text("batch_norm_param { use_global_stats: true }"));
  frozen->setup({&input_}, {&output_});
  frozen->forward({&input_}, {&output_});
  EXPECT_EQ(frozen->blobs()[2]->cpu_data()[0], 0.0f);
  EXPECT_NEAR(output_.cpu_data()[0], 1 / std::sqrt(kEps), 1e-2f);

  auto batch = make_layer(bn_text("batch_norm_param { use_global_stats: false eps: 0.25 }"), TEST);
  batch->setup({&input_}, {&output_});
  batch->forward({&input_}, {&output_});
  EXPECT_FLOAT_EQ(batch->blobs()[2]->cpu_data()[0], 1.0f);
  EXPECT_NEAR(output_.cpu_data()[0], -3 / std::sqrt(5.25f), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, TwoAndOneAxisInputs) {
  // (N, C): each column is a channel.
  input_.reshape({3, 2});
  set_data(input_, {1, 10, 2, 20, 3, 30});
  auto layer = make_layer(bn_text());
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  const float s0 = std::sqrt(2.0f / 3 + kEps), s1 = std::sqrt(200.0f / 3 + kEps);
  testing::expect_near_all(data_of(output_), {-1 / s0, -10 / s1, 0, 0, 1 / s0, 10 / s1}, 1e-5f);
  // (N): one channel.
  Blob flat({4});
  set_data(flat, {1, 2, 3, 4});
  auto single = make_layer(bn_text());
  single->setup({&flat}, {&output_});
  EXPECT_EQ(single->blobs()[0]->shape(), std::vector<int>{1});
  single->forward({&flat}, {&output_});
  EXPECT_NEAR(output_.cpu_data()[3], 1.5f / std::sqrt(1.25f + kEps), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, InPlaceMatchesOutOfPlace) {
  input_.reshape({3, 4, 2, 3});
  fill_uniform(input_, 21);
  Blob in_place;
  in_place.reshape(input_.shape());
  set_data(in_place, data_of(input_));
  auto separate = make_layer(bn_text());
  auto inplace = make_layer(bn_text());
  separate->setup({&input_}, {&output_});
  inplace->setup({&in_place}, {&in_place});
  separate->forward({&input_}, {&output_});
  inplace->forward({&in_place}, {&in_place});
  testing::expect_near_all(data_of(in_place), data_of(output_), 1e-6f);
  Blob weights(input_.shape());
  fill_uniform(weights, 22);
  set_data(output_, data_of(output_));
  std::copy(weights.cpu_data(), weights.cpu_data() + weights.count(), output_.mutable_cpu_diff());
  std::copy(weights.cpu_data(), weights.cpu_data() + weights.count(), in_place.mutable_cpu_diff());
  separate->backward({&output_}, {true}, {&input_});
  inplace->backward({&in_place}, {true}, {&in_place});
  testing::expect_near_all(testing::diff_of(in_place), testing::diff_of(input_), 1e-5f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, GradientWithBatchStatistics) {
  input_.reshape({3, 2, 2, 3});
  fill_uniform(input_, 7);
  auto layer = make_layer(bn_text());
  layer->setup({&input_}, {&output_});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(layer->param_propagate_down(i));
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, GradientWithStoredStatistics) {
  input_.reshape({2, 3, 2, 2});
  fill_uniform(input_, 8);
  auto layer = make_layer(bn_text(), TEST);
  layer->setup({&input_}, {&output_});
  set_data(*layer->blobs()[0], {0.5f, -0.2f, 0.1f});
  set_data(*layer->blobs()[1], {1.0f, 0.3f, 2.0f});
  set_data(*layer->blobs()[2], {0.8f});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

TEST_F(BatchNormTest, StatisticsGetFrozenParamSpecs) {
  auto layer = make_layer(bn_text());
  ASSERT_EQ(layer->layer_param().param_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(layer->layer_param().param(i).lr_mult(), 0.0f);
  // A user spec with lr_mult 0 is kept (its name too); the rest are added.
  auto named = make_layer(bn_text("param { lr_mult: 0 name: 'shared_mean' }"));
  ASSERT_EQ(named->layer_param().param_size(), 3);
  EXPECT_EQ(named->layer_param().param(0).name(), "shared_mean");
  // Three specs, the pre-1.0 way of freezing them, are replaced, as Caffe's
  // upgrade does.
  auto legacy = make_layer(
      bn_text("param { lr_mult: 0 } param { lr_mult: 0 decay_mult: 0 } param { lr_mult: 0 }"));
  ASSERT_EQ(legacy->layer_param().param_size(), 3);
  EXPECT_FALSE(legacy->layer_param().param(1).has_decay_mult());
  expect_error([&] { make_layer(bn_text("param { lr_mult: 1 }")); },
               {"layer 'bn' (BatchNorm)", "lr_mult 1", "not learnable"});
  // Snapshots leave the added specs out (reloading them would warn about
  // the deprecated form) but keep named ones.
  LayerParameter written;
  layer->to_proto(&written);
  EXPECT_EQ(written.param_size(), 0);
  named->to_proto(&written);
  EXPECT_EQ(written.param_size(), 3);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, RejectsChangedChannelsAndWrongStoredBlobs) {
  fill_by_hand();
  auto layer = make_layer(bn_text());
  layer->setup({&input_}, {&output_});
  Blob other({2, 3, 1, 2});
  expect_error([&] { layer->forward({&other}, {&output_}); },
               {"layer 'bn' (BatchNorm)", "2 3 1 2", "3 channels", "set up for 2"});

  LayerParameter two_blobs = testing::layer_param_from(bn_text());
  Blob stat({2});
  stat.to_proto(two_blobs.add_blobs());
  stat.to_proto(two_blobs.add_blobs());
  expect_error([&] { testing::create_layer(two_blobs)->setup({&input_}, {&output_}); },
               {"layer 'bn' (BatchNorm)", "2 stored blobs", "3"});

  LayerParameter wrong_shape = testing::layer_param_from(bn_text());
  Blob five({5});
  for (int i = 0; i < 2; ++i) five.to_proto(wrong_shape.add_blobs());
  Blob one({1});
  one.to_proto(wrong_shape.add_blobs());
  expect_error([&] { testing::create_layer(wrong_shape)->setup({&input_}, {&output_}); },
               {"layer 'bn' (BatchNorm)", "mean", "(5)", "(2)"});
}

// Caffe takes both: a nan square root, running averages that grow.
XTRAIN_DEVICE_TEST_F(BatchNormTest, ANegativeEpsOrAFractionOutsideZeroToOneIsAnError) {
  expect_error(
      [&] { make_layer(bn_text("batch_norm_param { eps: -1 }"))->setup({&input_}, {&output_}); },
      {"layer 'bn' (BatchNorm): batch_norm_param.eps -1 is negative"});
  for (const char* fraction : {"-0.5", "5"}) {
    expect_error(
        [&] {
          make_layer(bn_text(std::string("batch_norm_param { moving_average_fraction: ") +
                             fraction + " }"))
              ->setup({&input_}, {&output_});
        },
        {"layer 'bn' (BatchNorm): batch_norm_param.moving_average_fraction " +
         std::string(fraction) + " is outside [0, 1]"});
  }
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, KeepsStoredStatistics) {
  fill_by_hand();
  LayerParameter param = testing::layer_param_from(bn_text(), TEST);
  Blob mean({2}), variance({2}), weight({1});
  set_data(mean, {2, 4});
  set_data(variance, {8, 2});
  set_data(weight, {2});
  mean.to_proto(param.add_blobs());
  variance.to_proto(param.add_blobs());
  weight.to_proto(param.add_blobs());
  auto layer = testing::create_layer(param);
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  EXPECT_NEAR(output_.cpu_data()[1], 2 / std::sqrt(4.0f + kEps), 1e-6f);
}

// ---- scale_bias (NVIDIA Caffe 0.17): top = scale[c] * y + bias[c] ----------

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasScalesAndShiftsTheNormalisedValues) {
  fill_by_hand();
  auto layer = make_layer(bn_text("batch_norm_param { scale_bias: true }"));
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 5u);
  // By default the identity: scale 1, bias 0.
  EXPECT_EQ(data_of(*layer->blobs()[3]), (std::vector<float>{1, 1}));
  EXPECT_EQ(data_of(*layer->blobs()[4]), (std::vector<float>{0, 0}));
  EXPECT_TRUE(layer->param_propagate_down(3));
  EXPECT_TRUE(layer->param_propagate_down(4));
  set_data(*layer->blobs()[3], {2, -1});
  set_data(*layer->blobs()[4], {0.5f, 3});
  layer->forward({&input_}, {&output_});
  const float s = std::sqrt(5.0f + kEps);
  testing::expect_near_all(
      data_of(output_),
      {2 * -3 / s + 0.5f, 2 * -1 / s + 0.5f, 3, 3, 2 * 1 / s + 0.5f, 2 * 3 / s + 0.5f, 3, 3},
      1e-6f);
  // The statistics are those of the input, as without scale_bias.
  testing::expect_near_all(data_of(*layer->blobs()[0]), {4, 2}, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasFillersTurnItOnAndFillTheBlobs) {
  fill_by_hand();
  // As in NVIDIA Caffe, a scale_filler or bias_filler alone means scale_bias.
  auto layer =
      make_layer(bn_text("batch_norm_param { scale_filler { type: 'constant' value: 0.5 } "
                         "bias_filler { type: 'constant' value: -2 } }"));
  layer->setup({&input_}, {&output_});
  ASSERT_EQ(layer->blobs().size(), 5u);
  EXPECT_EQ(data_of(*layer->blobs()[3]), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(data_of(*layer->blobs()[4]), (std::vector<float>{-2, -2}));
  auto bias_only = make_layer(bn_text("batch_norm_param { bias_filler { type: 'constant' } }"));
  bias_only->setup({&input_}, {&output_});
  ASSERT_EQ(bias_only->blobs().size(), 5u);
  EXPECT_EQ(data_of(*bias_only->blobs()[3]), (std::vector<float>{1, 1}));
  // scale_bias: false and no filler: Caffe's three blobs.
  auto plain = make_layer(bn_text("batch_norm_param { scale_bias: false }"));
  plain->setup({&input_}, {&output_});
  EXPECT_EQ(plain->blobs().size(), 3u);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasWithStoredStatistics) {
  fill_by_hand();
  auto layer = make_layer(bn_text("batch_norm_param { scale_bias: true }"), TEST);
  layer->setup({&input_}, {&output_});
  set_data(*layer->blobs()[0], {2, 4});
  set_data(*layer->blobs()[1], {8, 2});
  set_data(*layer->blobs()[2], {2});
  set_data(*layer->blobs()[3], {3, 0.5f});
  set_data(*layer->blobs()[4], {-1, 1});
  layer->forward({&input_}, {&output_});
  const float s0 = std::sqrt(4.0f + kEps);  // channel 1 is its mean: y = 0
  testing::expect_near_all(data_of(output_),
                           {-1, 3 * 2 / s0 - 1, 1, 1, 3 * 4 / s0 - 1, 3 * 6 / s0 - 1, 1, 1}, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasGradientWithBatchStatistics) {
  input_.reshape({3, 2, 2, 3});
  fill_uniform(input_, 7);
  auto layer =
      make_layer(bn_text("batch_norm_param { scale_bias: true "
                         "scale_filler { type: 'uniform' min: 0.5 max: 2 } "
                         "bias_filler { type: 'uniform' min: -1 max: 1 } }"));
  layer->setup({&input_}, {&output_});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasGradientWithStoredStatistics) {
  input_.reshape({2, 3, 2, 2});
  fill_uniform(input_, 8);
  auto layer = make_layer(bn_text("batch_norm_param { scale_bias: true "
                                  "scale_filler { type: 'uniform' min: -2 max: 2 } "
                                  "bias_filler { type: 'uniform' min: -1 max: 1 } }"),
                          TEST);
  layer->setup({&input_}, {&output_});
  set_data(*layer->blobs()[0], {0.5f, -0.2f, 0.1f});
  set_data(*layer->blobs()[1], {1.0f, 0.3f, 2.0f});
  set_data(*layer->blobs()[2], {0.8f});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasInPlaceMatchesOutOfPlaceAndAccumulates) {
  for (const char* global : {"false", "true"}) {
    SCOPED_TRACE(std::string("use_global_stats: ") + global);
    const std::string text = bn_text(std::string("batch_norm_param { scale_bias: true "
                                                 "use_global_stats: ") +
                                     global +
                                     " scale_filler { type: 'uniform' min: 0.5 max: 2 } "
                                     "bias_filler { type: 'uniform' } }");
    input_.reshape({3, 4, 2, 3});
    fill_uniform(input_, 21);
    Blob in_place(input_.shape());
    set_data(in_place, data_of(input_));
    auto separate = make_layer(text);
    auto inplace = make_layer(text);
    separate->setup({&input_}, {&output_});
    inplace->setup({&in_place}, {&in_place});
    for (int i = 0; i < 5; ++i) {
      fill_uniform(*separate->blobs()[i], 30 + i, 0.5f, 1.5f);
      set_data(*inplace->blobs()[i], data_of(*separate->blobs()[i]));
    }
    separate->forward({&input_}, {&output_});
    inplace->forward({&in_place}, {&in_place});
    testing::expect_near_all(data_of(in_place), data_of(output_), 1e-6f);
    Blob weights(input_.shape());
    fill_uniform(weights, 22);
    for (Blob* top : {&output_, &in_place}) set_diff(*top, data_of(weights));
    for (auto* layer : {separate.get(), inplace.get()}) {
      for (int i = 3; i < 5; ++i) set_diff(*layer->blobs()[i], std::vector<float>(4, 1.0f));
    }
    separate->backward({&output_}, {true}, {&input_});
    inplace->backward({&in_place}, {true}, {&in_place});
    testing::expect_near_all(testing::diff_of(in_place), testing::diff_of(input_), 1e-5f);
    // The parameters' gradients were added to their diffs (1 before).
    for (int i = 3; i < 5; ++i) {
      testing::expect_near_all(testing::diff_of(*inplace->blobs()[i]),
                               testing::diff_of(*separate->blobs()[i]), 1e-5f);
    }
    // Their sums: the bias's is sum(dtop) per channel.
    std::vector<float> bias_gradient(4, 1.0f);
    const std::vector<float> dtop = data_of(weights);
    for (std::size_t i = 0; i < dtop.size(); ++i) bias_gradient[(i / 6) % 4] += dtop[i];
    testing::expect_near_all(testing::diff_of(*separate->blobs()[4]), bias_gradient, 1e-5f);
    // Without the bottom's gradient, only the parameters'.
    set_diff(input_, std::vector<float>(input_.count(), 7.0f));
    separate->backward({&output_}, {false}, {&input_});
    EXPECT_EQ(input_.cpu_diff()[0], 7.0f);
  }
}

TEST_F(BatchNormTest, ScaleBiasParamSpecsAreTheUsers) {
  // Unspecified: the Net's defaults, lr_mult and decay_mult 1 (what NVIDIA
  // Caffe forces).
  auto layer = make_layer(bn_text("batch_norm_param { scale_bias: true }"));
  ASSERT_EQ(layer->layer_param().param_size(), 3);
  // Given: kept, and written back.
  auto given =
      make_layer(bn_text("param { lr_mult: 0 } param { lr_mult: 0 } param { lr_mult: 0 } "
                         "param { lr_mult: 2 decay_mult: 0 } param { lr_mult: 3 } "
                         "batch_norm_param { scale_bias: true }"));
  ASSERT_EQ(given->layer_param().param_size(), 5);
  EXPECT_EQ(given->layer_param().param(3).lr_mult(), 2.0f);
  LayerParameter written;
  given->to_proto(&written);
  ASSERT_EQ(written.param_size(), 5);
  EXPECT_EQ(written.param(4).lr_mult(), 3.0f);
  // The statistics still may not learn.
  expect_error(
      [&] {
        make_layer(
            bn_text("param { lr_mult: 0 } param { lr_mult: 1 } param { lr_mult: 0 } "
                    "param { lr_mult: 1 } param { lr_mult: 1 } "
                    "batch_norm_param { scale_bias: true }"));
      },
      {"layer 'bn' (BatchNorm)", "param 1 has lr_mult 1", "scale_bias"});
}

XTRAIN_DEVICE_TEST_F(BatchNormTest, ScaleBiasStoredBlobsMustBeFive) {
  fill_by_hand();
  LayerParameter three =
      testing::layer_param_from(bn_text("batch_norm_param { scale_bias: true }"));
  Blob stat({2}), one({1});
  stat.to_proto(three.add_blobs());
  stat.to_proto(three.add_blobs());
  one.to_proto(three.add_blobs());
  expect_error([&] { testing::create_layer(three)->setup({&input_}, {&output_}); },
               {"layer 'bn' (BatchNorm)", "3 stored blobs", "with scale_bias", "5",
                "trained without scale_bias"});
  LayerParameter five = testing::layer_param_from(bn_text());
  stat.to_proto(five.add_blobs());
  stat.to_proto(five.add_blobs());
  one.to_proto(five.add_blobs());
  stat.to_proto(five.add_blobs());
  stat.to_proto(five.add_blobs());
  expect_error([&] { testing::create_layer(five)->setup({&input_}, {&output_}); },
               {"layer 'bn' (BatchNorm)", "5 stored blobs", "scale_bias: true"});
  // Five blobs with scale_bias are taken as they are.
  five.mutable_batch_norm_param()->set_scale_bias(true);
  set_data(stat, {3, 4});
  *five.mutable_blobs(3) = BlobProto();
  stat.to_proto(five.mutable_blobs(3));
  auto layer = testing::create_layer(five);
  layer->setup({&input_}, {&output_});
  EXPECT_EQ(data_of(*layer->blobs()[3]), (std::vector<float>{3, 4}));
}

// rows (4 x 2) -> BatchNorm -> linear -> half-square loss.
NetParameter batch_norm_net(const std::string& bn_extra = "") {
  testing::register_solver_test_layers();
  NetParameter param;
  read_proto_from_text_string(
      "name: 'bn_net'\n"
      "layer { name: 'rows' type: 'SolverTestRows' top: 'x'\n"
      "  input_param { shape { dim: 4 dim: 2 } } }\n"
      "layer { name: 'bn' type: 'BatchNorm' bottom: 'x' top: 'x' " +
          bn_extra +
          " }\n"
          "layer { name: 'linear' type: 'SolverTestLinear' bottom: 'x' top: 'y'\n"
          "  inner_product_param { num_output: 1 bias_term: false\n"
          "    weight_filler { type: 'constant' value: 0.5 } } }\n"
          "layer { name: 'loss' type: 'SolverTestHalfSquare' bottom: 'y' top: 'loss' }\n",
      &param);
  return param;
}

XTRAIN_DEVICE_TEST(BatchNormNet, SolverStepLeavesTheStatisticsAsForwardSetThem) {
  auto solver =
      create_solver(testing::solver_param(batch_norm_net(), "momentum: 0.9 weight_decay: 0.1"),
                    testing::quiet_solver_options());
  Net& net = solver->net();
  const int bn = 1;
  ASSERT_EQ(net.layer_names()[bn], "bn");
  const auto& stats = net.layers()[bn]->blobs();
  // The three statistics are learnable params to the Net, with lr_mult 0.
  ASSERT_EQ(net.learnable_params().size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(net.params_lr()[i], 0.0f);
  EXPECT_EQ(net.params_lr()[3], 1.0f);

  // Rows 0-3 of kRows: column means 0.625 and 0.75; unbiased variances
  // (sum of squared deviations / 3).
  double mean[2] = {0, 0}, squares[2] = {0, 0};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) mean[c] += testing::kRows[r][c] / 4.0;
  }
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) squares[c] += std::pow(testing::kRows[r][c] - mean[c], 2);
  }
  const float weight_before = net.learnable_params()[3]->cpu_data()[0];
  solver->step(1);
  EXPECT_FLOAT_EQ(stats[2]->cpu_data()[0], 1.0f);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(stats[0]->cpu_data()[c], mean[c], 1e-6) << "channel " << c;
    EXPECT_NEAR(stats[1]->cpu_data()[c], squares[c] / 3, 1e-5) << "channel " << c;
  }
  // The next batch is the same four rows: the sums grow by Caffe's rule only.
  solver->step(1);
  EXPECT_FLOAT_EQ(stats[2]->cpu_data()[0], 1.999f);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(stats[0]->cpu_data()[c], 1.999 * mean[c], 1e-5) << "channel " << c;
    EXPECT_NEAR(stats[1]->cpu_data()[c], 1.999 * squares[c] / 3, 1e-5) << "channel " << c;
  }
  // The linear layer did learn.
  EXPECT_NE(net.learnable_params()[3]->cpu_data()[0], weight_before);
}

// NVIDIA Caffe's scale_bias in a net: the scale and bias learn (lr_mult and
// decay_mult 1), the statistics do not.
XTRAIN_DEVICE_TEST(BatchNormNet, ScaleBiasLearnsTheScaleAndBiasOnly) {
  auto solver =
      create_solver(testing::solver_param(batch_norm_net("batch_norm_param { scale_bias: true }"),
                                          "momentum: 0.9 weight_decay: 0.1"),
                    testing::quiet_solver_options());
  Net& net = solver->net();
  ASSERT_EQ(net.learnable_params().size(), 6u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(net.params_lr()[i], 0.0f);
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(net.params_lr()[i], 1.0f);
    EXPECT_EQ(net.params_weight_decay()[i], 1.0f);
  }
  const auto& blobs = net.layers()[1]->blobs();
  solver->step(2);
  EXPECT_FLOAT_EQ(blobs[2]->cpu_data()[0], 1.999f);
  bool scale_moved = false, bias_moved = false;
  for (int c = 0; c < 2; ++c) {
    scale_moved |= blobs[3]->cpu_data()[c] != 1.0f;
    bias_moved |= blobs[4]->cpu_data()[c] != 0.0f;
  }
  EXPECT_TRUE(scale_moved);
  EXPECT_TRUE(bias_moved);
}

TEST(BatchNormNet, LearnableStatisticsAreAnErrorNamingTheLayer) {
  expect_error(
      [&] {
        NetOptions options;
        options.verbose = false;
        Net net(batch_norm_net("param { lr_mult: 0.5 }"), options);
      },
      {"layer 'bn' (BatchNorm)", "lr_mult 0.5"});
}

}  // namespace
}  // namespace xtrain

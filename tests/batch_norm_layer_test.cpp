// BatchNorm: batch and stored statistics by hand, Caffe's running sums, the
// phase defaults, in-place use, gradients, the frozen ParamSpecs, and a
// solver step that leaves the statistics as forward set them.
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

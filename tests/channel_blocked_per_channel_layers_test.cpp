// BatchNorm, Scale and Bias computing in the channel-blocked layout
// (MemoryLayout::kChannelBlocked): their per-lane sums add exactly what the
// plain per-plane sums add, and a net that keeps their activations blocked
// computes bit for bit what the plain one does, with no layout conversions in
// its steady state.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/channel_blocked_layout.hpp"
#include "core/engine_hooks.hpp"
#include "layers/channel_statistics.hpp"
#include "layers/channel_statistics_blocked.hpp"
#include "test_net_text.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/net.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {
namespace {

// ---- The per-lane sums against the plain plane sums -------------------------

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.5f, 3.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(engine);
  return values;
}

// Lane l of a block of B lanes, gathered into a plain plane.
std::vector<float> lane(const std::vector<float>& block, int lanes, int l, std::size_t spatial) {
  std::vector<float> plane(spatial);
  for (std::size_t s = 0; s < spatial; ++s) plane[s] = block[s * lanes + l];
  return plane;
}

using BlockSum = void (*)(const float*, std::size_t, double*);
using BlockDeviation = void (*)(const float*, const double*, std::size_t, double*);
using BlockSumAndDot = void (*)(const float*, const float*, std::size_t, double*, double*);

template <int B>
void expect_lanes_match_planes(BlockSum block_sum, BlockDeviation block_deviation,
                               BlockSumAndDot block_sum_and_dot) {
  SCOPED_TRACE(::testing::Message() << B << " channels per block");
  // Odd sizes: tails of 1, 2 and 3 after the four running sums.
  for (std::size_t spatial : {1u, 2u, 3u, 4u, 5u, 7u, 12u, 35u, 49u, 196u}) {
    const std::vector<float> a = random_values(spatial * B, 1);
    const std::vector<float> b = random_values(spatial * B, 2);
    double sums[B];
    double centers[B];
    double deviations[B];
    double dot_sums[B];
    double dots[B];
    block_sum(a.data(), spatial, sums);
    for (int l = 0; l < B; ++l) centers[l] = sums[l] / static_cast<double>(spatial);
    block_deviation(a.data(), centers, spatial, deviations);
    block_sum_and_dot(a.data(), b.data(), spatial, dot_sums, dots);
    for (int l = 0; l < B; ++l) {
      const std::vector<float> pa = lane(a, B, l, spatial);
      const std::vector<float> pb = lane(b, B, l, spatial);
      const double sum = channel_statistics::sum(pa.data(), spatial);
      // Exact equality: the same additions in the same order.
      EXPECT_EQ(sums[l], sum) << "spatial " << spatial << " lane " << l;
      EXPECT_EQ(deviations[l],
                channel_statistics::squared_deviation_sum(pa.data(), centers[l], spatial))
          << "spatial " << spatial << " lane " << l;
      const auto plain = channel_statistics::sum_and_dot(pa.data(), pb.data(), spatial);
      EXPECT_EQ(dot_sums[l], plain.sum) << "spatial " << spatial << " lane " << l;
      EXPECT_EQ(dots[l], plain.dot) << "spatial " << spatial << " lane " << l;
    }
  }
}

template <int B>
void expect_vector_lanes_match_planes() {
  expect_lanes_match_planes<B>(channel_statistics::blocked::sum<B>,
                               channel_statistics::blocked::squared_deviation_sum<B>,
                               channel_statistics::blocked::sum_and_dot<B>);
}

template <int B>
void expect_scalar_lanes_match_planes() {
  expect_lanes_match_planes<B>(channel_statistics::blocked::scalar::sum<B>,
                               channel_statistics::blocked::scalar::squared_deviation_sum<B>,
                               channel_statistics::blocked::scalar::sum_and_dot<B>);
}

TEST(ChannelBlockedStatistics, LaneSumsAreThePlainPlaneSums) {
  expect_vector_lanes_match_planes<8>();
  expect_vector_lanes_match_planes<16>();
}

TEST(ChannelBlockedStatistics, ScalarLaneSumsAreThePlainPlaneSums) {
  expect_scalar_lanes_match_planes<8>();
  expect_scalar_lanes_match_planes<16>();
}

// Scale's backward feeds a block to the accumulator in pieces (a multiple of
// four positions each but the last): the same sums as in one go.
template <int B>
void expect_pieces_sum_as_one() {
  SCOPED_TRACE(::testing::Message() << B << " channels per block");
  for (std::size_t spatial : {5u, 35u, 64u, 130u, 196u}) {
    const std::vector<float> a = random_values(spatial * B, 3);
    const std::vector<float> b = random_values(spatial * B, 4);
    double sums[B], dots[B];
    channel_statistics::blocked::sum_and_dot<B>(a.data(), b.data(), spatial, sums, dots);
    for (std::size_t piece : {4u, 8u, 64u}) {
      channel_statistics::blocked::SumAndDotAccumulator<B> pieces;
      channel_statistics::blocked::SumAndDotAccumulator<B> scalar_pieces;
      for (std::size_t first = 0; first < spatial; first += piece) {
        const std::size_t last = std::min(spatial, first + piece);
        pieces.add(a.data(), b.data(), first, last);
        scalar_pieces.add_scalar(a.data(), b.data(), first, last);
      }
      double piece_sums[B], piece_dots[B];
      double scalar_sums[B], scalar_dots[B];
      pieces.totals(piece_sums, piece_dots);
      scalar_pieces.totals(scalar_sums, scalar_dots);
      for (int l = 0; l < B; ++l) {
        EXPECT_EQ(piece_sums[l], sums[l]) << spatial << " in pieces of " << piece << ", lane " << l;
        EXPECT_EQ(piece_dots[l], dots[l]) << spatial << " in pieces of " << piece << ", lane " << l;
        EXPECT_EQ(scalar_sums[l], sums[l]) << spatial << " in pieces of " << piece;
        EXPECT_EQ(scalar_dots[l], dots[l]) << spatial << " in pieces of " << piece;
      }
    }
  }
}

TEST(ChannelBlockedStatistics, SumAndDotInPiecesIsInOneGo) {
  expect_pieces_sum_as_one<8>();
  expect_pieces_sum_as_one<16>();
}

// ---- Nets with the layers, blocked against plain ----------------------------

// The ResNet pattern, all in place: conv -> BatchNorm (batch statistics) ->
// Scale with a bias -> ReLU (fused into the Scale); then BatchNorm with stored
// statistics -> Scale without a bias -> Bias -> ReLU (not fused: after a
// Bias). Spatial sizes 5 x 7 (a tail after the four running sums) and 3 x 4.
const std::string kInPlaceNet = R"(
  name: "in_place"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 5, 7}, "type: 'uniform' min: 0 max: 4.99") +
                                R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 stride: 2
                              weight_filler { type: "gaussian" std: 0.1 }
                              bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "conv2"
          batch_norm_param { use_global_stats: true } }
  layer { name: "scale2" type: "Scale" bottom: "conv2" top: "conv2"
          scale_param { filler { type: "gaussian" mean: 1 std: 0.3 } } }
  layer { name: "bias2" type: "Bias" bottom: "conv2" top: "conv2"
          bias_param { filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
  layer { name: "conv3" type: "Convolution" bottom: "conv2" top: "conv3"
          convolution_param { num_output: 16 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "conv3" top: "ip"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// The same layers out of place, each writing a new top: BatchNorm with batch
// statistics, Scale with a bias, Bias, ReLU; then BatchNorm with stored
// statistics and Scale without a bias.
const std::string kOutOfPlaceNet = R"(
  name: "out_of_place"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 5, 7}, "type: 'uniform' min: 0 max: 4.99") +
                                   R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.3 }
                              bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "bn1" }
  layer { name: "scale1" type: "Scale" bottom: "bn1" top: "scale1"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bias1" type: "Bias" bottom: "scale1" top: "bias1"
          bias_param { filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "bias1" top: "bias1" }
  layer { name: "conv2" type: "Convolution" bottom: "bias1" top: "conv2"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 stride: 2
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "bn2"
          batch_norm_param { use_global_stats: true } }
  layer { name: "scale2" type: "Scale" bottom: "bn2" top: "scale2"
          scale_param { filler { type: "gaussian" mean: 1 std: 0.3 } } }
  layer { name: "conv3" type: "Convolution" bottom: "scale2" top: "conv3"
          convolution_param { num_output: 16 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "conv3" top: "ip"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// NVIDIA Caffe's pattern: BatchNorm with scale_bias (its own scale and bias,
// no Scale layer), in place before a ReLU, then out of place with stored
// statistics.
const std::string kScaleBiasNet = R"(
  name: "scale_bias"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 5, 7}, "type: 'uniform' min: 0 max: 4.99") +
                                  R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1"
          batch_norm_param { scale_bias: true scale_filler { type: "gaussian" mean: 1 std: 0.3 }
                             bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1 stride: 2
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "bn2"
          batch_norm_param { use_global_stats: true scale_bias: true
                             scale_filler { type: "gaussian" mean: 1 std: 0.3 }
                             bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "conv3" type: "Convolution" bottom: "bn2" top: "conv3"
          convolution_param { num_output: 16 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "conv3" top: "ip"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// Stored statistics for a BatchNorm with use_global_stats (zeros would make
// it a plain division by sqrt(eps)): mean sums, variance sums, scale factor.
void store_statistics(Net& net, const std::string& batch_norm) {
  std::vector<std::shared_ptr<Blob>>& blobs = net.layer_by_name(batch_norm)->blobs();
  std::mt19937 engine(7);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  float* mean_sum = blobs[0]->mutable_cpu_data();
  float* variance_sum = blobs[1]->mutable_cpu_data();
  for (std::size_t c = 0; c < blobs[0]->count(); ++c) {
    mean_sum[c] = normal(engine);
    variance_sum[c] = 0.2f + std::abs(normal(engine));
  }
  blobs[2]->mutable_cpu_data()[0] = 1.7f;
}

// The net text with its 5 x 7 input images resized to `image`
// ("dim: 5 dim: 7" by default).
std::string with_image_size(const std::string& text, const std::string& image) {
  std::string result = text;
  const std::string original = "dim: 5 dim: 7";
  result.replace(result.find(original), original.size(), image);
  return result;
}

std::unique_ptr<Net> make_net(const std::string& text, Phase phase, bool blocked) {
  NetOptions options;
  options.random_seed = 11;
  options.channel_blocked_activations = blocked;
  auto net = testing::make_quiet_net(text, phase, options);
  store_statistics(*net, "bn2");
  return net;
}

void expect_blocked(Net& net, const std::vector<std::string>& names, const std::string& when) {
  for (const std::string& name : names) {
    EXPECT_EQ(net.blob_by_name(name)->data_layout(), MemoryLayout::kChannelBlocked)
        << when << ": " << name << " data";
  }
}

// Runs `pass` (forward, or forward and backward) on the plain and the
// blocked net: the same loss, and in the steady state (iteration 1) no
// layout conversions. False, with nothing checked, when this build's conv1
// is not blocked (no oneDNN convolution).
template <typename Pass>
bool expect_same_pass(Net& plain, Net& blocked, Pass pass, int iteration, const std::string& when) {
  const std::size_t conversions_before = SyncedMemory::layout_conversion_count();
  const float plain_loss = pass(plain);
  const float blocked_loss = pass(blocked);
  if (blocked.blob_by_name("conv1")->data_layout() != MemoryLayout::kChannelBlocked) return false;
  if (iteration == 1) {
    EXPECT_EQ(SyncedMemory::layout_conversion_count(), conversions_before) << when;
  }
  EXPECT_EQ(plain_loss, blocked_loss) << when;
  return true;
}

// Two training iterations; the second is the steady state, which converts
// nothing. `blocked_blobs` must still be blocked after each pass.
void expect_training_matches(const std::string& text,
                             const std::vector<std::string>& blocked_blobs) {
  testing::ScopedConvImpl onednn("onednn");
  std::unique_ptr<Net> plain = make_net(text, TRAIN, false);
  std::unique_ptr<Net> blocked = make_net(text, TRAIN, true);
  for (int iteration = 0; iteration < 2; ++iteration) {
    const std::string when = "iteration " + std::to_string(iteration);
    plain->clear_param_diffs();
    blocked->clear_param_diffs();
    if (!expect_same_pass(
            *plain, *blocked, [](Net& net) { return net.forward_backward(); }, iteration, when)) {
      GTEST_SKIP() << "this build has no oneDNN convolution";
    }
    expect_blocked(*blocked, blocked_blobs, when);
    for (const std::string& name : blocked_blobs) {
      EXPECT_EQ(blocked->blob_by_name(name)->diff_layout(), MemoryLayout::kChannelBlocked)
          << when << ": " << name << " diff";
    }
    testing::expect_nets_match(*plain, *blocked, true, when);
  }
}

TEST(ChannelBlockedPerChannelLayers, InPlaceTrainingIsBitIdenticalToPlain) {
  expect_training_matches(kInPlaceNet, {"conv1", "conv2"});
  // The ResNet pattern's ReLU was done by the Scale, on blocked values.
  EXPECT_TRUE(engine_hooks(*make_net(kInPlaceNet, TRAIN, true)->layer_by_name("relu1"))
                  .absorbed_by_previous_layer());
}

// Images large enough for the layers to split their blocks over the thread
// pool (and a spatial size, 20 x 23, with a tail of 0 after the four running
// sums; 10 x 12 after the stride).
TEST(ChannelBlockedPerChannelLayers, InPlaceTrainingOnLargerImagesIsBitIdenticalToPlain) {
  expect_training_matches(with_image_size(kInPlaceNet, "dim: 20 dim: 23"), {"conv1", "conv2"});
}

TEST(ChannelBlockedPerChannelLayers, OutOfPlaceTrainingIsBitIdenticalToPlain) {
  expect_training_matches(kOutOfPlaceNet,
                          {"conv1", "bn1", "scale1", "bias1", "conv2", "bn2", "scale2"});
}

TEST(ChannelBlockedPerChannelLayers, ScaleBiasTrainingIsBitIdenticalToPlain) {
  expect_training_matches(kScaleBiasNet, {"conv1", "conv2", "bn2"});
}

// The TEST phase: every BatchNorm uses stored statistics, forward only.
TEST(ChannelBlockedPerChannelLayers, TestPhaseIsBitIdenticalToPlain) {
  testing::ScopedConvImpl onednn("onednn");
  for (const std::string& text : {kInPlaceNet, kOutOfPlaceNet, kScaleBiasNet}) {
    std::unique_ptr<Net> plain = make_net(text, TEST, false);
    std::unique_ptr<Net> blocked = make_net(text, TEST, true);
    store_statistics(*plain, "bn1");
    store_statistics(*blocked, "bn1");
    for (int iteration = 0; iteration < 2; ++iteration) {
      const std::string when = std::string(text == kInPlaceNet     ? "in place"
                                           : text == kScaleBiasNet ? "scale_bias"
                                                                   : "out of place") +
                               ", iteration " + std::to_string(iteration);
      if (!expect_same_pass(
              *plain, *blocked, [](Net& net) { return net.forward(); }, iteration, when)) {
        GTEST_SKIP() << "this build has no oneDNN convolution";
      }
      expect_blocked(*blocked, {"conv1", "conv2"}, when);
      testing::expect_nets_match(*plain, *blocked, false, when);
    }
  }
}

// What the layers do not take blocked: a Scale whose scale is a second
// bottom, and one spanning two axes, leave their bottoms plain.
TEST(ChannelBlockedPerChannelLayers, OnlyTheLearnedPerChannelFormsReadBlocked) {
  testing::ScopedConvImpl onednn("onednn");
  const char* text = R"(
    name: "unsupported"
    layer { name: "data" type: "DummyData" top: "data" top: "factor"
            dummy_data_param { shape { dim: 2 dim: 3 dim: 5 dim: 7 } shape { dim: 2 dim: 32 }
                               data_filler { type: "gaussian" std: 1 }
                               data_filler { type: "gaussian" std: 1 } } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
            convolution_param { num_output: 32 kernel_size: 3 pad: 1
                                weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "scale1" type: "Scale" bottom: "conv1" bottom: "factor" top: "scale1"
            scale_param { axis: 0 } }
    layer { name: "conv2" type: "Convolution" bottom: "scale1" top: "conv2"
            convolution_param { num_output: 32 kernel_size: 3 pad: 1
                                weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "bias2" type: "Bias" bottom: "conv2" top: "conv2"
            bias_param { num_axes: 2 } }
    layer { name: "conv3" type: "Convolution" bottom: "conv2" top: "conv3"
            convolution_param { num_output: 32 kernel_size: 3 pad: 1
                                weight_filler { type: "gaussian" std: 0.3 } } }
    layer { name: "bn3" type: "BatchNorm" bottom: "conv3" top: "conv3" }
    layer { name: "ip" type: "InnerProduct" bottom: "conv3" top: "ip"
            inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  )";
  const std::unique_ptr<Net> net = testing::make_quiet_net(text, TRAIN, NetOptions());
  net->forward();
  EXPECT_EQ(net->blob_by_name("conv1")->data_layout(), MemoryLayout::kPlain);
  EXPECT_EQ(net->blob_by_name("conv2")->data_layout(), MemoryLayout::kPlain);
  // conv3's readers are BatchNorm (blocked) and InnerProduct (plain).
  EXPECT_EQ(net->blob_by_name("conv3")->data_layout(), MemoryLayout::kPlain);
  EXPECT_TRUE(engine_hooks(*net->layer_by_name("bn3")).reads_channel_blocked_bottom(0));
  EXPECT_FALSE(engine_hooks(*net->layer_by_name("scale1")).reads_channel_blocked_bottom(0));
  EXPECT_FALSE(engine_hooks(*net->layer_by_name("bias2")).reads_channel_blocked_bottom(0));
}

}  // namespace
}  // namespace xtrain

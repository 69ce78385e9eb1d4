// One kept copy for Caffe's BatchNorm -> Scale chains (EngineHooks::kept_top_copy,
// EngineHooks::use_kept_bottom_copy, NetOptions::share_kept_copies): an in-place
// Scale that reads the copy BatchNorm keeps of its output computes bit for
// bit what a Scale with its own copy computes, in either layout, and holds
// no copy of its own.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/engine_hooks.hpp"
#include "test_net_text.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/net_memory_count.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// ---- Two layers on one blob, in each layout ---------------------------------

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.3f, 2.0f);
  std::vector<float> values(count);
  for (float& v : values) v = normal(engine);
  return values;
}

std::unique_ptr<Layer> make_layer(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  param.set_phase(TRAIN);
  auto layer = LayerRegistry::global().create(param);
  layer->seed(5);
  return layer;
}

struct ChainResult {
  std::vector<float> bottom_diff;
  std::vector<float> scale_diff;
  std::vector<float> bias_diff;
  std::size_t scale_buffer_bytes = 0;
};

// BatchNorm then Scale (with an absorbed ReLU) in place on one (2, 32, 5, 5)
// blob: forward with the blob in `forward_layout`, backward with the top's
// gradient arriving in `diff_layout` (in place the two may differ).
ChainResult run_chain(bool share, MemoryLayout forward_layout, MemoryLayout diff_layout) {
  auto batch_norm = make_layer("name: 'bn' type: 'BatchNorm'");
  auto scale = make_layer(
      "name: 'scale' type: 'Scale' scale_param { bias_term: true "
      "filler { type: 'gaussian' mean: 1 std: 0.3 } bias_filler { type: 'gaussian' std: 0.3 } }");
  Blob blob({2, 32, 5, 5});
  const std::vector<float> input = random_values(blob.count(), 1);
  std::copy(input.begin(), input.end(), blob.mutable_cpu_data());
  const BlobVec blobs = {&blob};
  batch_norm->setup(blobs, blobs);
  scale->setup(blobs, blobs);
  EngineHooks& scale_hooks = *mutable_engine_hooks(*scale);
  EXPECT_TRUE(scale_hooks.absorb_following_relu());
  if (share) {
    EXPECT_TRUE(
        scale_hooks.use_kept_bottom_copy(mutable_engine_hooks(*batch_norm)->kept_top_copy()));
  }

  for (int iteration = 0; iteration < 2; ++iteration) {
    std::copy(input.begin(), input.end(), blob.mutable_cpu_data());
    if (forward_layout == MemoryLayout::kChannelBlocked) {
      blob.mutable_cpu_data_in(MemoryLayout::kChannelBlocked);
    }
    batch_norm->forward(blobs, blobs);
    scale->forward(blobs, blobs);
    const std::vector<float> top_diff = random_values(blob.count(), 2 + iteration);
    std::copy(top_diff.begin(), top_diff.end(), blob.mutable_cpu_diff());
    if (diff_layout == MemoryLayout::kChannelBlocked) {
      blob.mutable_cpu_diff_in(MemoryLayout::kChannelBlocked);
    }
    scale->backward(blobs, {true}, blobs);
    batch_norm->backward(blobs, {true}, blobs);
  }
  ChainResult result;
  result.bottom_diff.assign(blob.cpu_diff(), blob.cpu_diff() + blob.count());
  const Blob& scale_blob = *scale->blobs()[0];
  const Blob& bias_blob = *scale->blobs()[1];
  result.scale_diff.assign(scale_blob.cpu_diff(), scale_blob.cpu_diff() + scale_blob.count());
  result.bias_diff.assign(bias_blob.cpu_diff(), bias_blob.cpu_diff() + bias_blob.count());
  result.scale_buffer_bytes = scale_hooks.buffer_bytes();
  return result;
}

void expect_shared_chain_matches(MemoryLayout forward_layout, MemoryLayout diff_layout) {
  const ChainResult own = run_chain(false, forward_layout, diff_layout);
  const ChainResult shared = run_chain(true, forward_layout, diff_layout);
  EXPECT_EQ(own.bottom_diff, shared.bottom_diff);
  EXPECT_EQ(own.scale_diff, shared.scale_diff);
  EXPECT_EQ(own.bias_diff, shared.bias_diff);
  // Without its own copy (a conversion's scratch, if any, stays).
  EXPECT_EQ(own.scale_buffer_bytes - shared.scale_buffer_bytes, 2 * 5 * 5 * 32 * sizeof(float));
}

TEST(KeptCopySharing, PlainChainIsBitIdentical) {
  expect_shared_chain_matches(MemoryLayout::kPlain, MemoryLayout::kPlain);
}
TEST(KeptCopySharing, BlockedChainIsBitIdentical) {
  expect_shared_chain_matches(MemoryLayout::kChannelBlocked, MemoryLayout::kChannelBlocked);
}
// The gradient arrives in the other layout: the first reader of the shared
// copy converts it, and the second must find it converted.
TEST(KeptCopySharing, ChainWithGradientInTheOtherLayoutIsBitIdentical) {
  expect_shared_chain_matches(MemoryLayout::kChannelBlocked, MemoryLayout::kPlain);
  expect_shared_chain_matches(MemoryLayout::kPlain, MemoryLayout::kChannelBlocked);
}

// With stored statistics BatchNorm keeps nothing, so there is nothing to lend.
TEST(KeptCopySharing, BatchNormWithStoredStatisticsLendsNothing) {
  auto batch_norm =
      make_layer("name: 'bn' type: 'BatchNorm' batch_norm_param { use_global_stats: true }");
  Blob blob({2, 32, 5, 5});
  batch_norm->setup({&blob}, {&blob});
  EXPECT_EQ(mutable_engine_hooks(*batch_norm)->kept_top_copy(), nullptr);
}

// With scale_bias BatchNorm keeps its normalised values, which are not its
// output (that is scale * y + bias): a Scale after it must keep its own.
TEST(KeptCopySharing, BatchNormWithScaleBiasLendsNothing) {
  for (const char* global : {"false", "true"}) {
    auto batch_norm =
        make_layer(std::string("name: 'bn' type: 'BatchNorm' batch_norm_param { scale_bias: true "
                               "use_global_stats: ") +
                   global + " }");
    Blob blob({2, 32, 5, 5});
    batch_norm->setup({&blob}, {&blob});
    EXPECT_EQ(mutable_engine_hooks(*batch_norm)->kept_top_copy(), nullptr) << global;
  }
}

// ---- Whole nets --------------------------------------------------------------

// ResNet-style Convolution -> BatchNorm -> Scale -> ReLU chains, in place,
// and near misses the Net must not share: a Scale in place right after a
// BatchNorm, but on another blob of the same shape (conv2b's Scale after
// conv2a's BatchNorm), and a Scale after a BatchNorm with stored statistics.
const std::string kNet = R"(
  name: "chains"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 8, 8}, "type: 'uniform' min: 0 max: 2.99") +
                         R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.2 }
                        bias_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2a" type: "Convolution" bottom: "conv1" top: "conv2a"
          convolution_param { num_output: 16 kernel_size: 1 bias_term: false
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "conv2b" type: "Convolution" bottom: "conv1" top: "conv2b"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "bn2a" type: "BatchNorm" bottom: "conv2a" top: "conv2a" }
  layer { name: "scale2b" type: "Scale" bottom: "conv2b" top: "conv2b"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.2 } } }
  layer { name: "sum" type: "Eltwise" bottom: "conv2a" bottom: "conv2b" top: "sum" }
  layer { name: "bn3" type: "BatchNorm" bottom: "sum" top: "sum"
          batch_norm_param { use_global_stats: true } }
  layer { name: "scale3" type: "Scale" bottom: "sum" top: "sum"
          scale_param { filler { type: "gaussian" mean: 1 std: 0.2 } } }
  layer { name: "ip" type: "InnerProduct" bottom: "sum" top: "ip"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> make_net(bool share, bool blocked,
                              std::optional<NumberType> precision = std::nullopt) {
  NetOptions options;
  options.share_kept_copies = share;
  options.channel_blocked_activations = blocked;
  options.precision = precision;
  return testing::make_quiet_net(kNet, TRAIN, options);
}

void expect_shared_net_matches(bool blocked, std::optional<NumberType> precision = std::nullopt) {
  auto own = make_net(false, blocked, precision);
  auto shared = make_net(true, blocked, precision);
  for (int iteration = 0; iteration < 2; ++iteration) {
    own->forward_backward();
    shared->forward_backward();
    testing::expect_nets_match(*own, *shared, true, "iteration " + std::to_string(iteration));
    own->clear_param_diffs();
    shared->clear_param_diffs();
  }
  // Only scale1 reads BatchNorm's copy: 2 * 16 * 8 * 8 values fewer.
  EXPECT_EQ(engine_hooks(*shared->layer_by_name("scale1")).buffer_bytes(), 0u);
  EXPECT_GT(engine_hooks(*shared->layer_by_name("scale2b")).buffer_bytes(), 0u);
  EXPECT_GT(engine_hooks(*shared->layer_by_name("scale3")).buffer_bytes(), 0u);
  EXPECT_EQ(count_net_memory(*own).layer_buffers.at("Scale") -
                count_net_memory(*shared).layer_buffers.at("Scale"),
            2 * 16 * 8 * 8 * sizeof(float));
  // BatchNorm keeps its output in the type the net stores it in.
  const std::size_t value_bytes = precision ? 2 : sizeof(float);
  EXPECT_EQ(engine_hooks(*shared->layer_by_name("bn1")).buffer_bytes(),
            2 * 16 * 8 * 8 * value_bytes);
}

TEST(KeptCopySharing, NetIsBitIdentical) { expect_shared_net_matches(false); }
TEST(KeptCopySharing, NetWithBlockedActivationsIsBitIdentical) {
  testing::ScopedConvImpl onednn("onednn");
  expect_shared_net_matches(true);
}
// In 16 bits BatchNorm holds its copy in 16 bits: the Scale that reads it
// (and recomputes its top from it) gets the values its own copy of the
// stored top would hold, so the nets still agree bit for bit.
TEST(KeptCopySharing, Bfloat16NetIsBitIdentical) {
  expect_shared_net_matches(false, NumberType::kBfloat16);
}
TEST(KeptCopySharing, Float16NetWithBlockedActivationsIsBitIdentical) {
  testing::ScopedConvImpl onednn("onednn");
  expect_shared_net_matches(true, NumberType::kFloat16);
}

}  // namespace
}  // namespace xtrain

// Channel-blocked activations (MemoryLayout::kChannelBlocked, oneDNN's
// nChw16c or nChw8c; the layout tests run at both widths, the nets at the
// one this CPU's oneDNN computes in): a blob's storage may hold that layout,
// the plain accessors still give the plain values, and a net that keeps its
// convolution/pooling/ReLU activations blocked
// (NetOptions::channel_blocked_activations) computes bit for bit what the
// plain one does, with no conversions in its steady state.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/channel_blocked_layout.hpp"
#include "core/net_memory_plan.hpp"
#include "test_net_text.hpp"
#include "xtrain/blob.hpp"
#include "xtrain/net.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {
namespace {

void fill_counting(Blob& blob) {
  float* data = blob.mutable_cpu_data();
  float* diff = blob.mutable_cpu_diff();
  for (std::size_t i = 0; i < blob.count(); ++i) {
    data[i] = static_cast<float>(i);
    diff[i] = -static_cast<float>(i);
  }
}

TEST(ChannelBlockedLayout, BlockedIndexIsNchw16c) {
  // Written out by hand for 2 x 32 x 2 x 3: block (n, c / 16), pixel, lane.
  const ChannelBlockedShape shape{2, 32, 6, 16};
  EXPECT_EQ(shape.blocked_index(0, 0, 0), 0u);
  EXPECT_EQ(shape.blocked_index(0, 1, 0), 1u);
  EXPECT_EQ(shape.blocked_index(0, 0, 1), 16u);
  EXPECT_EQ(shape.blocked_index(0, 16, 0), 96u);   // second block of image 0
  EXPECT_EQ(shape.blocked_index(1, 0, 0), 192u);   // image 1
  EXPECT_EQ(shape.blocked_index(1, 31, 5), 383u);  // the last value
  EXPECT_EQ(shape.blocked_index(1, 17, 2), 192u + 96u + 2 * 16u + 1u);
}

TEST(ChannelBlockedLayout, BlockedIndexIsNchw8c) {
  // 2 x 24 x 2 x 3: block (n, c / 8), pixel, lane.
  const ChannelBlockedShape shape{2, 24, 6, 8};
  EXPECT_EQ(shape.blocks(), 6);
  EXPECT_EQ(shape.blocked_index(0, 1, 0), 1u);
  EXPECT_EQ(shape.blocked_index(0, 0, 1), 8u);
  EXPECT_EQ(shape.blocked_index(0, 8, 0), 48u);    // second block of image 0
  EXPECT_EQ(shape.blocked_index(1, 0, 0), 144u);   // image 1
  EXPECT_EQ(shape.blocked_index(1, 23, 5), 287u);  // the last value
  EXPECT_EQ(shape.blocked_index(1, 17, 2), 144u + 96u + 2 * 8u + 1u);
}

// The layout tests below run at both widths.
class ChannelBlockedLayoutWidth : public ::testing::TestWithParam<int> {
 protected:
  testing::ScopedChannelBlock width_{GetParam()};
};

INSTANTIATE_TEST_SUITE_P(BothWidths, ChannelBlockedLayoutWidth,
                         ::testing::ValuesIn(testing::kChannelBlockWidths),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return "by" + std::to_string(param_info.param);
                         });

TEST_P(ChannelBlockedLayoutWidth, BlobConvertsOnDemandBothWays) {
  Blob blob({2, 32, 3, 5});
  ASSERT_TRUE(blob.can_be_channel_blocked());
  fill_counting(blob);
  const ChannelBlockedShape shape{2, 32, 15, GetParam()};

  const float* blocked = blob.cpu_data_in(MemoryLayout::kChannelBlocked);
  EXPECT_EQ(blob.data_layout(), MemoryLayout::kChannelBlocked);
  EXPECT_EQ(blob.diff_layout(), MemoryLayout::kPlain);  // data and diff are apart
  for (int n = 0; n < 2; ++n) {
    for (int c = 0; c < 32; ++c) {
      for (int s = 0; s < 15; ++s) {
        const float plain_index = static_cast<float>((n * 32 + c) * 15 + s);
        ASSERT_EQ(blocked[shape.blocked_index(n, c, s)], plain_index) << n << " " << c << " " << s;
      }
    }
  }
  // Same storage, same pointer: the conversion is in place.
  EXPECT_EQ(blocked, blob.cpu_data_in(MemoryLayout::kChannelBlocked));

  const float* plain = blob.cpu_data();
  EXPECT_EQ(plain, blocked);
  EXPECT_EQ(blob.data_layout(), MemoryLayout::kPlain);
  for (std::size_t i = 0; i < blob.count(); ++i) ASSERT_EQ(plain[i], static_cast<float>(i));
}

TEST_P(ChannelBlockedLayoutWidth, OverwriteMarksWithoutConverting) {
  const int lanes = GetParam();
  Blob blob({1, 16, 2, 2});
  fill_counting(blob);
  const std::size_t conversions = SyncedMemory::layout_conversion_count();
  float* blocked = blob.overwrite_cpu_diff_in(MemoryLayout::kChannelBlocked);
  EXPECT_EQ(SyncedMemory::layout_conversion_count(), conversions);
  // Lane c % lanes of pixel s in block c / lanes holds channel c: write
  // (c + 1) * 100 + s in blocked order.
  for (int c = 0; c < 16; ++c) {
    for (int s = 0; s < 4; ++s) {
      blocked[(c / lanes * 4 + s) * lanes + c % lanes] = static_cast<float>((c + 1) * 100 + s);
    }
  }
  const float* plain = blob.cpu_diff();
  EXPECT_EQ(SyncedMemory::layout_conversion_count(), conversions + 1);
  for (int c = 0; c < 16; ++c) {
    for (int s = 0; s < 4; ++s) ASSERT_EQ(plain[c * 4 + s], static_cast<float>((c + 1) * 100 + s));
  }
}

TEST_P(ChannelBlockedLayoutWidth, ReshapeKeepsThePlainValues) {
  Blob blob({2, 16, 2, 2});
  fill_counting(blob);
  blob.mutable_cpu_data_in(MemoryLayout::kChannelBlocked);
  blob.reshape({4, 32});  // what a Flatten-like reshape means: the plain order
  EXPECT_FALSE(blob.can_be_channel_blocked());
  EXPECT_EQ(blob.data_layout(), MemoryLayout::kPlain);
  const float* plain = blob.cpu_data();
  for (std::size_t i = 0; i < blob.count(); ++i) ASSERT_EQ(plain[i], static_cast<float>(i));
}

TEST_P(ChannelBlockedLayoutWidth, OnlyFourAxesWithWholeBlocksOfChannels) {
  EXPECT_TRUE(Blob({1, 16, 1, 1}).can_be_channel_blocked());
  EXPECT_TRUE(Blob({3, 48, 7, 5}).can_be_channel_blocked());
  EXPECT_EQ(Blob({1, 24, 4, 4}).can_be_channel_blocked(), GetParam() == 8);
  EXPECT_FALSE(Blob({1, 20, 4, 4}).can_be_channel_blocked());
  EXPECT_FALSE(Blob({1, 16, 4}).can_be_channel_blocked());
  EXPECT_FALSE(Blob({0, 16, 4, 4}).can_be_channel_blocked());
}

// A CIFAR-10 quick-like net: convolutions with 16-multiple channels, MAX and
// AVE pooling with ceil-mode edge windows, in-place ReLUs (one after a
// pooling), a pooling with a plain reader (the InnerProduct), and a second
// convolution branch whose top has a plain reader.
const std::string kNet = R"(
  name: "blocked"
  force_backward: true
)" + testing::random_data_and_labels({3, 3, 15, 15}, "type: 'uniform' min: 0 max: 4.99") +
                         R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 32 kernel_size: 5 pad: 2
                              weight_filler { type: "gaussian" std: 0.1 }
                              bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
          pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
  layer { name: "relu1" type: "ReLU" bottom: "pool1" top: "pool1" }
  layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.1 }
                              bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
  layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
          pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
  layer { name: "conv3" type: "Convolution" bottom: "pool2" top: "conv3"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "relu3" type: "ReLU" bottom: "conv3" top: "conv3" }
  layer { name: "pool3" type: "Pooling" bottom: "conv3" top: "pool3"
          pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
  layer { name: "ip" type: "InnerProduct" bottom: "pool3" top: "ip"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

// Branches and joins: Split (conv1, conv2a, sum feed several layers), a
// channel Concat of three blocked branches, an Eltwise SUM with an absorbed
// ReLU, and a join that must stay plain: conv5 is read by an LRN (plain), so
// sum2 cannot be blocked, and then neither may its other bottom conv4 (the
// Eltwise computes in one layout and would have to convert it).
const std::string kBranchingNet = R"(
  name: "branching"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 9, 9}, "type: 'uniform' min: 0 max: 4.99") +
                                  R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2a" type: "Convolution" bottom: "conv1" top: "conv2a"
          convolution_param { num_output: 32 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "relu2a" type: "ReLU" bottom: "conv2a" top: "conv2a" }
  layer { name: "conv2b" type: "Convolution" bottom: "conv1" top: "conv2b"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "pool2c" type: "Pooling" bottom: "conv1" top: "pool2c"
          pooling_param { pool: MAX kernel_size: 3 stride: 1 pad: 1 } }
  layer { name: "concat" type: "Concat" bottom: "conv2a" bottom: "conv2b" bottom: "pool2c"
          top: "concat" }
  layer { name: "conv3" type: "Convolution" bottom: "concat" top: "conv3"
          convolution_param { num_output: 32 kernel_size: 3 pad: 1
                              weight_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "sum" type: "Eltwise" bottom: "conv3" bottom: "conv2a" top: "sum" }
  layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
  layer { name: "conv4" type: "Convolution" bottom: "sum" top: "conv4"
          convolution_param { num_output: 16 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "conv5" type: "Convolution" bottom: "sum" top: "conv5"
          convolution_param { num_output: 16 kernel_size: 1
                              weight_filler { type: "gaussian" std: 0.2 } } }
  layer { name: "lrn5" type: "LRN" bottom: "conv5" top: "lrn5" }
  layer { name: "sum2" type: "Eltwise" bottom: "conv4" bottom: "conv5" top: "sum2"
          eltwise_param { operation: MAX } }
  layer { name: "ip" type: "InnerProduct" bottom: "sum2" top: "ip"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "ip2" type: "InnerProduct" bottom: "lrn5" top: "ip2"
          inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  layer { name: "loss2" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss2" }
)";

std::unique_ptr<Net> make_net(bool blocked, bool share_memory, const std::string& text = kNet) {
  NetOptions options;
  options.channel_blocked_activations = blocked;
  options.share_activation_memory = share_memory;
  return testing::make_quiet_net(text, TRAIN, options);
}

bool onednn_in_use(Net& net) {
  return net.layer_by_name("conv1") != nullptr && net.blob_by_name("conv1")->count() > 0 &&
         net.blob_by_name("conv1")->data_layout() == MemoryLayout::kChannelBlocked;
}

// Two iterations of forward + backward with blocked activations and without:
// the same bits everywhere; `blocked_names` are blocked after forward and
// backward, `plain_names` are not; the second iteration converts nothing.
void expect_blocked_net_matches_plain(bool share_memory, const std::string& text,
                                      const std::vector<std::string>& blocked_names,
                                      const std::vector<std::string>& plain_names) {
  testing::ScopedConvImpl onednn("onednn");
  std::unique_ptr<Net> plain = make_net(false, share_memory, text);
  std::unique_ptr<Net> blocked = make_net(true, share_memory, text);
  // With the memory plan, a blob whose values no backward reads lends its
  // storage once forward is done with it: after backward it holds another
  // blob's values, so only the others are looked at.
  std::set<std::string> lent;
  if (share_memory) {
    const std::unique_ptr<Net> unplanned = make_net(true, false, text);
    for (const auto& buffer : plan_net_memory(*unplanned, {}).data_buffers) {
      for (int blob : buffer.blobs) lent.insert(unplanned->blob_names()[blob]);
    }
  }
  auto kept = [&](const std::vector<std::string>& names) {
    std::vector<std::string> result;
    for (const std::string& name : names) {
      if (!lent.count(name)) result.push_back(name);
    }
    return result;
  };
  std::vector<std::string> looked_at;
  for (const std::string& name : blocked->blob_names()) {
    if (!lent.count(name)) looked_at.push_back(name);
  }
  for (int iteration = 0; iteration < 2; ++iteration) {
    const std::size_t conversions_before = SyncedMemory::layout_conversion_count();
    const float plain_loss = plain->forward_backward();
    const float blocked_loss = blocked->forward_backward();
    if (!onednn_in_use(*blocked)) GTEST_SKIP() << "this build has no oneDNN convolution";
    // The second pass is the steady state: nothing converted along the way.
    if (iteration == 1) {
      EXPECT_EQ(SyncedMemory::layout_conversion_count(), conversions_before);
    }
    EXPECT_EQ(plain_loss, blocked_loss);
    // The blocked path really ran: these are still blocked until read below.
    for (const std::string& name : kept(blocked_names)) {
      EXPECT_EQ(blocked->blob_by_name(name)->data_layout(), MemoryLayout::kChannelBlocked) << name;
    }
    for (const std::string& name : kept(plain_names)) {
      EXPECT_EQ(blocked->blob_by_name(name)->data_layout(), MemoryLayout::kPlain) << name;
    }
    testing::expect_nets_match(*plain, *blocked, !share_memory,
                               "iteration " + std::to_string(iteration), &looked_at);
    plain->clear_param_diffs();
    blocked->clear_param_diffs();
  }
}

const std::vector<std::string> kChainBlocked = {"conv1", "pool1", "conv2", "pool2", "conv3"};
const std::vector<std::string> kChainPlain = {"data", "pool3", "ip"};

TEST(ChannelBlockedActivations, NetIsBitIdenticalToPlain) {
  expect_blocked_net_matches_plain(false, kNet, kChainBlocked, kChainPlain);
}

TEST(ChannelBlockedActivations, NetWithSharedMemoryIsBitIdenticalToPlain) {
  expect_blocked_net_matches_plain(true, kNet, kChainBlocked, kChainPlain);
}

const std::vector<std::string> kBranchesBlocked = {"conv1",  "conv2a", "conv2b", "pool2c",
                                                   "concat", "conv3",  "sum"};
const std::vector<std::string> kBranchesPlain = {"data", "conv4", "conv5", "lrn5", "sum2"};

TEST(ChannelBlockedActivations, BranchingNetIsBitIdenticalToPlain) {
  expect_blocked_net_matches_plain(false, kBranchingNet, kBranchesBlocked, kBranchesPlain);
}

TEST(ChannelBlockedActivations, BranchingNetWithSharedMemoryIsBitIdenticalToPlain) {
  expect_blocked_net_matches_plain(true, kBranchingNet, kBranchesBlocked, kBranchesPlain);
}

// Which blobs the net keeps blocked: between layers that compute in that
// layout only; never a blob a plain layer reads, nor a net output.
TEST(ChannelBlockedActivations, OnlyBetweenLayersThatComputeBlocked) {
  testing::ScopedConvImpl onednn("onednn");
  std::unique_ptr<Net> net = make_net(true, false);
  net->forward();
  if (!onednn_in_use(*net)) GTEST_SKIP() << "this build has no oneDNN convolution";
  EXPECT_EQ(net->blob_by_name("data")->data_layout(), MemoryLayout::kPlain);  // 3 channels
  EXPECT_EQ(net->blob_by_name("conv1")->data_layout(), MemoryLayout::kChannelBlocked);
  EXPECT_EQ(net->blob_by_name("pool3")->data_layout(), MemoryLayout::kPlain);  // InnerProduct
  EXPECT_EQ(net->blob_by_name("ip")->data_layout(), MemoryLayout::kPlain);

  std::unique_ptr<Net> off = make_net(false, false);
  off->forward();
  for (const std::string& name : off->blob_names()) {
    EXPECT_EQ(off->blob_by_name(name)->data_layout(), MemoryLayout::kPlain) << name;
  }
}

// A net reshaped to a shape whose convolutions run on another engine
// decides its layouts again. In the default (auto) choice conv2, a 1x1
// convolution of 0.15 MFLOP at batch 3, runs on oneDNN, so pool1 is kept
// blocked; at batch 1 (0.05 MFLOP) it runs on GEMM, which computes plain,
// and pool1 must then be written plain, or conv2 would convert it on every
// pass.
TEST(ChannelBlockedActivations, ReshapeDecidesLayoutsAgain) {
  const char* text = R"(
    name: "reshaped"
    layer { name: "data" type: "Input" top: "data"
            input_param { shape { dim: 3 dim: 3 dim: 15 dim: 15 } } }
    layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
            convolution_param { num_output: 32 kernel_size: 5 pad: 2
                                weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
            pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
    layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
            convolution_param { num_output: 16 kernel_size: 1
                                weight_filler { type: "gaussian" std: 0.1 } } }
  )";
  testing::ScopedConvImpl automatic(nullptr);
  std::unique_ptr<Net> net = make_net(true, false, text);
  net->forward();
  if (!onednn_in_use(*net)) GTEST_SKIP() << "this build has no oneDNN convolution";
  ASSERT_EQ(net->blob_by_name("pool1")->data_layout(), MemoryLayout::kChannelBlocked);

  net->blob_by_name("data")->reshape({1, 3, 15, 15});
  net->reshape();
  net->forward();
  const std::size_t conversions_before = SyncedMemory::layout_conversion_count();
  net->forward();
  EXPECT_EQ(SyncedMemory::layout_conversion_count(), conversions_before);
  EXPECT_EQ(net->blob_by_name("conv1")->data_layout(), MemoryLayout::kChannelBlocked);
  EXPECT_EQ(net->blob_by_name("pool1")->data_layout(), MemoryLayout::kPlain);
}

}  // namespace
}  // namespace xtrain

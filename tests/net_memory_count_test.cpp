// The memory count of `xtrain time` (core/net_memory_count.hpp), against a
// count by hand of a small net's blobs: shared storage once, untouched
// diffs not at all, layer buffers by type.
#include "xtrain/net_memory_count.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "blocked_layout_test_support.hpp"
#include "test_net_text.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// data (2, 3, 9, 9) -> conv (2, 4, 9, 9) with BatchNorm, Scale and ReLU in
// place -> MAX pooling (2, 4, 5, 5) -> ip (2, 3) -> loss.
const std::string kSmallNet = R"(
  name: "count_me"
)" + testing::random_data_and_labels({2, 3, 9, 9}, "type: 'constant' value: 1") +
                              R"(
  layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
          convolution_param { num_output: 4 kernel_size: 3 pad: 1
                              weight_filler { type: "xavier" } } }
  layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
  layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
  layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
  layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

constexpr std::size_t kFloat = sizeof(float);

std::unique_ptr<Net> make_small_net(const std::string& extra_layers = "") {
  return testing::make_quiet_net(kSmallNet + extra_layers, TRAIN, NetOptions());
}

TEST(NetMemoryCount, CountsASmallNetByKind) {
  testing::ScopedConvImpl gemm("gemm");  // a known im2col buffer
  auto net = make_small_net();
  net->forward_backward();
  const NetMemoryCount count = count_net_memory(*net);

  // conv weights 4*3*3*3 + bias 4; BatchNorm's mean, variance, factor 4 + 4
  // + 1; Scale 4 + 4; ip 3*100 + 3.
  EXPECT_EQ(count.parameters, (112 + 9 + 8 + 303) * kFloat);
  // BatchNorm's statistics get no gradient, so their diffs stay unallocated.
  EXPECT_EQ(count.parameter_gradients, (112 + 8 + 303) * kFloat);
  // data 486, label 2, conv (with its three in-place layers) 648, pool 200,
  // ip 6, loss 1.
  EXPECT_EQ(count.activations, (486 + 2 + 648 + 200 + 6 + 1) * kFloat);
  // No gradient for data or label.
  EXPECT_EQ(count.activation_gradients, (648 + 200 + 6 + 1) * kFloat);
  // BatchNorm's x_norm_ (which the in-place Scale reads as its saved input:
  // NetOptions::share_kept_copies), pooling's argmax, the convolution's
  // columns (3*3*3 rows of 9*9 pixels).
  EXPECT_EQ(count.layer_buffers.at("BatchNorm"), 648 * kFloat);
  EXPECT_EQ(count.layer_buffers.count("Scale"), 0u);
  EXPECT_EQ(count.layer_buffers.at("Pooling"), 200 * sizeof(int));
  EXPECT_EQ(count.layer_buffers.at("Convolution"), 27 * 81 * kFloat);
  EXPECT_EQ(count.layer_buffers.count("ReLU"), 0u);
  EXPECT_EQ(count.total(), count.parameters + count.parameter_gradients + count.activations +
                               count.activation_gradients + count.layer_buffer_total());
}

// Blobs that share their values count once: an Accuracy layer makes the Net
// split ip and label, and the Splits' tops are views of their bottoms.
TEST(NetMemoryCount, CountsSharedValuesOnce) {
  testing::ScopedConvImpl gemm("gemm");
  auto net = make_small_net(
      "layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip' bottom: 'label' "
      "top: 'accuracy' }");
  ASSERT_TRUE(net->has_blob("ip_ip_0_split_0"));
  net->forward_backward();
  // As above, plus the accuracy.
  EXPECT_EQ(count_net_memory(*net).activations, (486 + 2 + 648 + 200 + 6 + 1 + 1) * kFloat);
}

// Before the first forward pass nothing is allocated but what setup wrote:
// the parameters, the loss weight in the loss's diff, DummyData's tops.
TEST(NetMemoryCount, CountsNothingUnallocated) {
  testing::ScopedConvImpl gemm("gemm");
  auto net = make_small_net();
  const NetMemoryCount count = count_net_memory(*net);
  EXPECT_EQ(count.parameters, (112 + 9 + 8 + 303) * kFloat);
  EXPECT_EQ(count.parameter_gradients, 0u);
  EXPECT_EQ(count.activation_gradients, 1 * kFloat);
  EXPECT_LT(count.activations, (486 + 2 + 648 + 200 + 6 + 1) * kFloat);
}

}  // namespace
}  // namespace xtrain

// BatchNorm with the in-place Scale after it fused in (NetOptions::fuse_layers,
// EngineHooks::absorb_following_scale): the fused net computes bit for bit
// what the unfused one does -- in both layouts, in fp32, bf16 and fp16, with
// and without the memory plan, with a frozen scale -- only the pattern it is
// meant for is fused, and a data-parallel step hears of the Scale's
// gradients only once they are computed.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/engine_hooks.hpp"
#include "test_net_text.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

using testing::same_bits;

// 16 channels: channel-blocked on every CPU (blocks of 16 or 8). bn1/scale1
// with a ReLU, bn2/scale2 without one and with a frozen scale, bn3/scale3
// whose Scale writes a new top (not fused), bn4/scale4/relu4 followed by a
// Dropout in place (not fused: the Dropout rewrites the values the ReLU's
// mask reads), and a 5-channel branch (plain layout).
std::string net_text() {
  return R"(
  name: "bn_scale_fusion"
)" + testing::random_data_and_labels({2, 3, 6, 6}, "type: 'constant' value: 1") +
         R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv2" type: "Convolution" bottom: "conv1" top: "conv2"
          convolution_param { num_output: 16 kernel_size: 1 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "conv2" }
  layer { name: "scale2" type: "Scale" bottom: "conv2" top: "conv2"
          param { lr_mult: 0 } param { lr_mult: 1 }
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "sum" type: "Eltwise" bottom: "conv1" bottom: "conv2" top: "sum" }
  layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
  layer { name: "conv3" type: "Convolution" bottom: "sum" top: "conv3"
          convolution_param { num_output: 5 kernel_size: 3 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn3" type: "BatchNorm" bottom: "conv3" top: "conv3" }
  layer { name: "scale3" type: "Scale" bottom: "conv3" top: "scaled3"
          scale_param { bias_term: true } }
  layer { name: "conv4" type: "Convolution" bottom: "scaled3" top: "conv4"
          convolution_param { num_output: 5 kernel_size: 1 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn4" type: "BatchNorm" bottom: "conv4" top: "conv4" }
  layer { name: "scale4" type: "Scale" bottom: "conv4" top: "conv4"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu4" type: "ReLU" bottom: "conv4" top: "conv4" }
  layer { name: "drop4" type: "Dropout" bottom: "conv4" top: "conv4" }
  layer { name: "conv5" type: "Convolution" bottom: "sum" top: "conv5"
          convolution_param { num_output: 5 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn5" type: "BatchNorm" bottom: "conv5" top: "conv5" }
  layer { name: "scale5" type: "Scale" bottom: "conv5" top: "conv5"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu5" type: "ReLU" bottom: "conv5" top: "conv5" }
  layer { name: "ip4" type: "InnerProduct" bottom: "conv4" top: "ip4"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "ip5" type: "InnerProduct" bottom: "conv5" top: "ip5"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "sum_ip" type: "Eltwise" bottom: "ip4" bottom: "ip5" top: "sum_ip" }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "sum_ip" bottom: "label" top: "loss" }
)";
}

std::unique_ptr<Net> make_net(bool fuse, std::optional<NumberType> precision = std::nullopt,
                              bool share_memory = false) {
  NetOptions options;
  options.random_seed = 7;
  options.fuse_layers = fuse;
  options.precision = precision;
  options.share_activation_memory = share_memory;
  return testing::make_quiet_net(net_text(), TRAIN, options);
}

bool absorbed(const Net& net, const std::string& layer) {
  return engine_hooks(*net.layer_by_name(layer)).absorbed_by_previous_layer();
}

TEST(BatchNormScaleFusion, OnlyAnInPlaceScaleAfterBatchNormIsFused) {
  auto fused = make_net(true);
  EXPECT_TRUE(absorbed(*fused, "scale1"));
  EXPECT_TRUE(absorbed(*fused, "scale2")) << "frozen scale";
  EXPECT_TRUE(absorbed(*fused, "scale5"));
  EXPECT_FALSE(absorbed(*fused, "scale3")) << "new top";
  EXPECT_FALSE(absorbed(*fused, "scale4")) << "a Dropout rewrites the blob";
  EXPECT_TRUE(absorbed(*fused, "relu1")) << "the Scale's ReLU stays absorbed";
  auto unfused = make_net(false);
  EXPECT_FALSE(absorbed(*unfused, "scale1"));
}

// Trains both nets in lockstep for a few plain gradient steps (so that the
// values move) and compares everything that is still the net's own.
void expect_identical_training(std::optional<NumberType> precision, bool share_memory) {
  auto fused = make_net(true, precision, share_memory);
  auto unfused = make_net(false, precision, share_memory);
  ASSERT_TRUE(absorbed(*fused, "scale1"));
  const std::vector<std::string> outputs = {"loss"};
  for (int iteration = 0; iteration < 3; ++iteration) {
    const std::string when = "iteration " + std::to_string(iteration);
    fused->clear_param_diffs();
    unfused->clear_param_diffs();
    const float fused_loss = fused->forward_backward();
    const float unfused_loss = unfused->forward_backward();
    EXPECT_TRUE(same_bits(&fused_loss, &unfused_loss, 1)) << when;
    // With the memory plan the blobs' storage serves others by now.
    testing::expect_nets_match(*unfused, *fused, !share_memory, when,
                               share_memory ? &outputs : nullptr);
    for (auto* net : {fused.get(), unfused.get()}) {
      for (Blob* param : net->learnable_params()) {
        param->scale_diff(0.05f);
        param->update();
      }
    }
  }
  // The ReLU clipped something and the frozen scale stayed frozen.
  const Blob& conv1 = *fused->blob_by_name("conv1");
  int zeros = 0;
  for (std::size_t i = 0; i < conv1.count() && !share_memory; ++i) {
    zeros += conv1.cpu_data()[i] == 0.0f;
  }
  EXPECT_TRUE(share_memory || zeros > 0);
  const Blob& frozen = *fused->layer_by_name("scale2")->blobs()[0];
  EXPECT_EQ(frozen.asum_diff(), 0.0);
  EXPECT_GT(fused->layer_by_name("scale2")->blobs()[1]->asum_diff(), 0.0);
}

TEST(BatchNormScaleFusion, Float32IsBitIdentical) { expect_identical_training(std::nullopt, false); }
TEST(BatchNormScaleFusion, Bfloat16IsBitIdentical) {
  expect_identical_training(NumberType::kBfloat16, false);
}
TEST(BatchNormScaleFusion, Float16IsBitIdentical) {
  expect_identical_training(NumberType::kFloat16, false);
}
// The plan recomputes the fused chains' outputs from BatchNorm's copy.
TEST(BatchNormScaleFusion, WithTheMemoryPlanIsBitIdentical) {
  expect_identical_training(std::nullopt, true);
  expect_identical_training(NumberType::kBfloat16, true);
}

// Data parallelism sums a layer's gradients once backward says the layer is
// done: the fused Scale's are computed by its BatchNorm, after it.
TEST(BatchNormScaleFusion, AFusedScaleIsReportedDoneAfterItsGradientsAreComputed) {
  auto net = make_net(true);
  const auto& names = net->layer_names();
  const int scale = static_cast<int>(std::find(names.begin(), names.end(), "scale1") - names.begin());
  const int batch_norm = scale - 1;
  ASSERT_EQ(names[batch_norm], "bn1");
  const Blob& bias = *net->layer_by_name("scale1")->blobs()[1];
  net->clear_param_diffs();
  net->forward();
  std::vector<int> order;
  double bias_gradient_when_done = -1;
  net->backward([&](int layer) {
    order.push_back(layer);
    if (layer == scale) bias_gradient_when_done = bias.asum_diff();
  });
  EXPECT_GT(bias.asum_diff(), 0.0);
  EXPECT_EQ(bias_gradient_when_done, bias.asum_diff());
  const auto at = [&](int layer) { return std::find(order.begin(), order.end(), layer) - order.begin(); };
  // After the BatchNorm that did its work (whose time that was), with only
  // other absorbed layers (the Scale's ReLU) between them.
  ASSERT_GT(at(scale), at(batch_norm));
  for (auto k = at(batch_norm) + 1; k < at(scale); ++k) {
    EXPECT_TRUE(absorbed(*net, names[order[k]])) << names[order[k]];
  }
  EXPECT_EQ(order.size(), names.size());
}

}  // namespace
}  // namespace xtrain

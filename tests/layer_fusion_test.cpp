// Fusing an in-place ReLU into the in-place Scale before it
// (NetOptions::fuse_layers, Layer::absorb_following_relu): the fused net
// computes bit for bit what the unfused one does, forward and backward, and
// only the pattern it is meant for is fused.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// conv -> BatchNorm -> Scale -> ReLU, all in place (fused), an Eltwise SUM
// with an in-place ReLU (fused), then a PROD with one (not fused: its
// gradient reads its top), the Scale pattern with the ReLU writing a new top
// (not fused), a leaky ReLU (not fused), and a ReLU after an InnerProduct
// (which cannot take one over: not fused).
const char* kNet = R"(
  name: "fusion"
  force_backward: true
  layer { name: "data" type: "DummyData" top: "data" top: "label"
          dummy_data_param { shape { dim: 2 dim: 3 dim: 7 dim: 7 } shape { dim: 2 }
                             data_filler { type: "gaussian" std: 1 }
                             data_filler { type: "constant" value: 1 } } }
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 5 kernel_size: 3 pad: 1 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" }
  layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1"
          scale_param { bias_term: true filler { type: "gaussian" mean: 1 std: 0.3 }
                        bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
  layer { name: "conv1b" type: "Convolution" bottom: "conv1" top: "conv1b"
          convolution_param { num_output: 5 kernel_size: 1 weight_filler { type: "msra" } } }
  layer { name: "sum" type: "Eltwise" bottom: "conv1" bottom: "conv1b" top: "sum"
          eltwise_param { coeff: 1 coeff: -0.5 } }
  layer { name: "relu_sum" type: "ReLU" bottom: "sum" top: "sum" }
  layer { name: "prod" type: "Eltwise" bottom: "conv1" bottom: "conv1b" top: "prod"
          eltwise_param { operation: PROD } }
  layer { name: "relu_prod" type: "ReLU" bottom: "prod" top: "prod" }
  layer { name: "ip_prod" type: "InnerProduct" bottom: "prod" top: "ip_prod"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "loss_prod" type: "SoftmaxWithLoss" bottom: "ip_prod" bottom: "label"
          top: "loss_prod" }
  layer { name: "conv2" type: "Convolution" bottom: "sum" top: "conv2"
          convolution_param { num_output: 4 kernel_size: 3 bias_term: false
                              weight_filler { type: "msra" } } }
  layer { name: "bn2" type: "BatchNorm" bottom: "conv2" top: "conv2" }
  layer { name: "scale2" type: "Scale" bottom: "conv2" top: "conv2"
          scale_param { bias_term: true bias_filler { type: "gaussian" std: 0.3 } } }
  layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "relu2" }
  layer { name: "scale3" type: "Scale" bottom: "relu2" top: "relu2" scale_param { bias_term: true } }
  layer { name: "leaky3" type: "ReLU" bottom: "relu2" top: "relu2"
          relu_param { negative_slope: 0.1 } }
  layer { name: "ip" type: "InnerProduct" bottom: "relu2" top: "ip"
          inner_product_param { num_output: 6 weight_filler { type: "xavier" } } }
  layer { name: "relu_ip" type: "ReLU" bottom: "ip" top: "ip" }
  layer { name: "ip2" type: "InnerProduct" bottom: "ip" top: "ip2"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> make_net(bool fuse) {
  NetParameter param;
  read_proto_from_text_string(kNet, &param);
  param.mutable_state()->set_phase(TRAIN);
  NetOptions options;
  options.verbose = false;
  options.random_seed = 5;
  options.fuse_layers = fuse;
  return std::make_unique<Net>(param, options);
}

bool same_bits(const float* a, const float* b, std::size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

TEST(LayerFusion, OnlyAnInPlaceReluAfterAnInPlaceScaleIsAbsorbed) {
  auto fused = make_net(true);
  EXPECT_TRUE(fused->layer_by_name("relu1")->absorbed_by_previous_layer());
  EXPECT_TRUE(fused->layer_by_name("relu_sum")->absorbed_by_previous_layer());
  EXPECT_FALSE(fused->layer_by_name("relu_prod")->absorbed_by_previous_layer()) << "PROD";
  EXPECT_FALSE(fused->layer_by_name("relu2")->absorbed_by_previous_layer()) << "new top";
  EXPECT_FALSE(fused->layer_by_name("leaky3")->absorbed_by_previous_layer()) << "leaky";
  EXPECT_FALSE(fused->layer_by_name("relu_ip")->absorbed_by_previous_layer()) << "after ip";
  auto unfused = make_net(false);
  EXPECT_FALSE(unfused->layer_by_name("relu1")->absorbed_by_previous_layer());
}

TEST(LayerFusion, FusedNetIsBitIdentical) {
  auto fused = make_net(true);
  auto unfused = make_net(false);
  for (int iteration = 0; iteration < 3; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    fused->clear_param_diffs();
    unfused->clear_param_diffs();
    const float fused_loss = fused->forward_backward();
    const float unfused_loss = unfused->forward_backward();
    EXPECT_TRUE(same_bits(&fused_loss, &unfused_loss, 1)) << fused_loss << " vs " << unfused_loss;
    for (const char* name : {"data", "conv1", "conv1b", "sum", "prod", "conv2", "relu2"}) {
      const Blob& a = *fused->blob_by_name(name);
      const Blob& b = *unfused->blob_by_name(name);
      EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count())) << name << " data";
      EXPECT_TRUE(same_bits(a.cpu_diff(), b.cpu_diff(), a.count())) << name << " diff";
    }
    // The ReLUs' masks matter: some values were clipped.
    for (const char* name : {"conv1", "sum"}) {
      const Blob& blob = *fused->blob_by_name(name);
      int zeros = 0;
      for (std::size_t i = 0; i < blob.count(); ++i) zeros += blob.cpu_data()[i] == 0.0f;
      EXPECT_GT(zeros, 0) << name;
    }
    ASSERT_EQ(fused->learnable_params().size(), unfused->learnable_params().size());
    for (std::size_t i = 0; i < fused->learnable_params().size(); ++i) {
      const Blob& a = *fused->learnable_params()[i];
      const Blob& b = *unfused->learnable_params()[i];
      EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count())) << "param " << i;
      EXPECT_TRUE(same_bits(a.cpu_diff(), b.cpu_diff(), a.count())) << "param diff " << i;
    }
  }
}

}  // namespace
}  // namespace xtrain

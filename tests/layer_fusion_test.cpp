// Fusing an in-place ReLU into the in-place Scale before it
// (NetOptions::fuse_layers, EngineHooks::absorb_following_relu): the fused net
// computes bit for bit what the unfused one does, forward and backward, and
// only the pattern it is meant for is fused.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/engine_hooks.hpp"
#include "test_net_text.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

using testing::same_bits;

// conv -> BatchNorm -> Scale -> ReLU, all in place (fused), an Eltwise SUM
// with an in-place ReLU (fused), then a PROD with one (not fused: its
// gradient reads its top), the Scale pattern with the ReLU writing a new top
// (not fused), a leaky ReLU (not fused), and a ReLU after an InnerProduct
// (which cannot take one over: not fused).
const std::string kNet = R"(
  name: "fusion"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 7, 7}, "type: 'constant' value: 1") +
                         R"(
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
  NetOptions options;
  options.random_seed = 5;
  options.fuse_layers = fuse;
  return testing::make_quiet_net(kNet, TRAIN, options);
}

// Whether the Net gave `layer`'s work to the layer before it.
bool absorbed(const Net& net, const std::string& layer) {
  return engine_hooks(*net.layer_by_name(layer)).absorbed_by_previous_layer();
}

TEST(LayerFusion, OnlyAnInPlaceReluAfterAnInPlaceScaleIsAbsorbed) {
  auto fused = make_net(true);
  EXPECT_TRUE(absorbed(*fused, "relu1"));
  EXPECT_TRUE(absorbed(*fused, "relu_sum"));
  EXPECT_FALSE(absorbed(*fused, "relu_prod")) << "PROD";
  EXPECT_FALSE(absorbed(*fused, "relu2")) << "new top";
  EXPECT_FALSE(absorbed(*fused, "leaky3")) << "leaky";
  EXPECT_FALSE(absorbed(*fused, "relu_ip")) << "after ip";
  auto unfused = make_net(false);
  EXPECT_FALSE(absorbed(*unfused, "relu1"));
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

// A layer of one's own derives from Layer alone: y = 2 x, dE/dx = 2 dE/dy,
// in place or not. The CPU passes get a plain layer's answers from it.
class OwnDoublingLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "LayerFusionTestDoubling"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->reshape_like(*bottom[0]);
  }

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    const float* x = bottom[0]->cpu_data();
    float* y = top[0]->mutable_cpu_data();
    for (std::size_t i = 0; i < bottom[0]->count(); ++i) y[i] = 2 * x[i];
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    for (std::size_t i = 0; i < bottom[0]->count(); ++i) dx[i] = 2 * dy[i];
  }
};

// Without "own", conv would be channel-blocked from conv to conv2 and the
// ReLU fused into the Scale.
const std::string kOwnLayerNet = R"(
  name: "own"
  force_backward: true
)" + testing::random_data_and_labels({2, 3, 6, 6}, "type: 'constant' value: 1") +
                                 R"(
  layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1
                              weight_filler { type: "msra" } } }
  layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
  layer { name: "own" type: "LayerFusionTestDoubling" bottom: "conv" top: "conv" }
  layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
  layer { name: "conv2" type: "Convolution" bottom: "conv" top: "conv2"
          convolution_param { num_output: 16 kernel_size: 3 pad: 1
                              weight_filler { type: "msra" } } }
  layer { name: "ip" type: "InnerProduct" bottom: "conv2" top: "ip"
          inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::unique_ptr<Net> make_own_layer_net(bool cpu_passes) {
  LayerRegistry& registry = LayerRegistry::global();
  if (!registry.has("LayerFusionTestDoubling")) {
    add_layer<OwnDoublingLayer>(registry, "LayerFusionTestDoubling");
  }
  NetOptions options;
  options.random_seed = 5;
  options.fuse_layers = cpu_passes;
  options.share_kept_copies = cpu_passes;
  options.channel_blocked_activations = cpu_passes;
  return testing::make_quiet_net(kOwnLayerNet, TRAIN, options);
}

// In place between a Scale and a ReLU, it keeps the ReLU from being fused
// into the Scale and the blob it reads plain; the net computes what it
// computes without the passes.
TEST(LayerFusion, ALayerOfOnesOwnIsComputedPlainly) {
  auto with_passes = make_own_layer_net(true);
  auto without = make_own_layer_net(false);
  Layer& own = *with_passes->layer_by_name("own");
  EXPECT_EQ(mutable_engine_hooks(own), nullptr);
  EXPECT_FALSE(engine_hooks(own).reads_channel_blocked_bottom(0));
  EXPECT_FALSE(absorbed(*with_passes, "relu"));
  const float loss = with_passes->forward_backward();
  const float plain_loss = without->forward_backward();
  EXPECT_TRUE(same_bits(&loss, &plain_loss, 1)) << loss << " vs " << plain_loss;
  EXPECT_EQ(with_passes->blob_by_name("conv")->data_layout(), MemoryLayout::kPlain);
  const Blob& weights = *with_passes->layer_by_name("conv")->blobs()[0];
  const Blob& plain_weights = *without->layer_by_name("conv")->blobs()[0];
  EXPECT_TRUE(same_bits(weights.cpu_diff(), plain_weights.cpu_diff(), weights.count()));
}

}  // namespace
}  // namespace xtrain

// The memory plan's data sharing in a training net on the CPU
// (core/net_memory_plan.hpp, EngineHooks::backward_touches_*_data): blobs whose
// values no backward pass touches give their storage to blobs born after
// forward is done with them, and the net computes bit for bit what it
// computes without the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/net_memory_plan.hpp"
#include "storage_test_support.hpp"
#include "test_net_text.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// Convolution -> BatchNorm -> Scale (-> ReLU) chains, in place, joined by an
// Eltwise sum: branch_b's values die with the sum's forward (BatchNorm and
// Scale keep the normalised values), branch_a's live on for the mask of the
// ReLU its Scale absorbs (unfused; fused into BatchNorm the mask comes from
// the copy), and every convolution's bottom for its weight gradient.
std::string chain(const std::string& name, const std::string& bottom, bool relu) {
  std::string text = "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom +
                     "' top: '" + name +
                     "' convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false "
                     "weight_filler { type: 'gaussian' std: 0.3 } } }\n";
  text += "layer { name: 'bn_" + name + "' type: 'BatchNorm' bottom: '" + name + "' top: '" + name +
          "' }\n";
  text += "layer { name: 'scale_" + name + "' type: 'Scale' bottom: '" + name + "' top: '" + name +
          "' scale_param { bias_term: true filler { type: 'gaussian' mean: 1 std: 0.2 } "
          "bias_filler { type: 'gaussian' std: 0.2 } } }\n";
  if (relu) {
    text += "layer { name: 'relu_" + name + "' type: 'ReLU' bottom: '" + name + "' top: '" + name +
            "' }\n";
  }
  return text;
}

std::string net_text() {
  std::string text = R"(
    name: "chains"
)" + testing::random_data_and_labels({2, 3, 7, 7}, "type: 'uniform' min: 0 max: 2.99") +
                     R"(
  )";
  text += chain("stem", "data", true);
  text += chain("branch_a", "stem", true);
  text += chain("branch_b", "stem", false);
  text +=
      "layer { name: 'sum' type: 'Eltwise' bottom: 'branch_a' bottom: 'branch_b' top: 'sum' }\n";
  text += chain("head", "sum", false);
  text += chain("tail", "head", true);
  text += R"(
    layer { name: "ip" type: "InnerProduct" bottom: "tail" top: "ip"
            inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  )";
  return text;
}

std::unique_ptr<Net> make_net(bool share, bool fuse) {
  NetOptions options;
  options.share_activation_memory = share;
  options.fuse_layers = fuse;
  return testing::make_quiet_net(net_text(), TRAIN, options);
}

void expect_shared_training_matches(bool fuse) {
  auto plain = make_net(false, fuse);
  auto shared = make_net(true, fuse);
  // The plan must share some data, or this test proves nothing.
  ASSERT_LT(testing::blob_storage_bytes(*shared, false), testing::blob_storage_bytes(*plain, false));
  for (int iteration = 0; iteration < 3; ++iteration) {
    const float plain_loss = plain->forward_backward();
    const float shared_loss = shared->forward_backward();
    EXPECT_EQ(plain_loss, shared_loss);
    for (std::size_t i = 0; i < plain->learnable_params().size(); ++i) {
      const Blob& a = *plain->learnable_params()[i];
      const Blob& b = *shared->learnable_params()[i];
      EXPECT_TRUE(testing::same_bits(a.cpu_diff(), b.cpu_diff(), a.count()))
          << "iteration " << iteration << ": param diff " << plain->param_display_names()[i];
    }
    plain->clear_param_diffs();
    shared->clear_param_diffs();
  }
}

TEST(NetTrainingDataPlan, IsBitIdentical) { expect_shared_training_matches(true); }
TEST(NetTrainingDataPlan, WithoutFusedReluIsBitIdentical) { expect_shared_training_matches(false); }

// Which blobs share: stem's, branch_a's, sum's and head's values are needed
// in backward (the convolutions' weight gradients; the sum's recomputation)
// but can be written again there: the chains by their BatchNorm (which took
// the Scale over) from its copy, the sum from branch_a and branch_b
// (EngineHooks::recompute_top).
// So they lend their storage between the passes, and the sum's bottoms come
// back just before it, at the same step, in forward order. branch_b, dead
// after the sum's forward except for that one step, finds no blob to share
// with in a net this small and keeps its storage (then its values are never
// lost and need no recomputing).
TEST(NetTrainingDataPlan, SharesValuesBackwardDoesNotTouchOrRecomputes) {
  auto net = make_net(false, true);  // the plan as the Net would apply it
  const NetMemoryPlan plan = plan_net_memory(*net, {});
  std::set<std::string> shared;
  for (const auto& buffer : plan.data_buffers) {
    for (int blob : buffer.blobs) shared.insert(net->blob_names()[blob]);
  }
  for (const char* blob : {"stem", "branch_a", "sum"}) EXPECT_EQ(shared.count(blob), 1u) << blob;
  std::vector<std::string> recomputing;
  int sum_step = -1;
  int branch_a_step = -1;
  for (const NetMemoryPlan::Recompute& recompute : plan.recomputes) {
    const std::string& layer = net->layer_names()[recompute.layer];
    recomputing.push_back(layer);
    if (layer == "sum") sum_step = recompute.before_backward_of;
    if (layer == "bn_branch_a") branch_a_step = recompute.before_backward_of;
    // Before the backward of a layer that has the blob, never after.
    EXPECT_GE(recompute.before_backward_of, recompute.layer);
  }
  auto position = [&](const std::string& layer) {
    return std::find(recomputing.begin(), recomputing.end(), layer) - recomputing.begin();
  };
  ASSERT_LT(position("sum"), static_cast<long>(recomputing.size()));
  ASSERT_LT(position("bn_branch_a"), static_cast<long>(recomputing.size()));
  EXPECT_LT(position("bn_branch_a"), position("sum")) << "the sum's bottom comes back first";
  EXPECT_EQ(branch_a_step, sum_step);
  EXPECT_EQ(net->layer_names()[sum_step], "head") << "the sum is back for head's backward";
  EXPECT_EQ(std::count(recomputing.begin(), recomputing.end(), "bn_branch_b"),
            shared.count("branch_b"))
      << "branch_b is recomputed exactly when its storage is lent out";
}

}  // namespace
}  // namespace xtrain

// A solver's first gradient exchange starts only after its whole backward
// pass (on a GPU the first backward loads kernels and allocates memory, which
// may wait for an NCCL sum already spinning on the device: docs/cuda.md, "a
// safe first iteration"); from the second iteration on, the sums overlap
// backward again.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test_net_text.hpp"
#include "two_equal_replicas.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

// data -> ip1 -> relu -> ip2 -> loss: ip1 is the last layer backward reaches.
const std::string kNet = R"(
name: 'first_exchange'
)" + testing::random_data_and_labels({4, 32}, "type: 'constant' value: 1") +
                         R"(
layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
  inner_product_param { num_output: 16 weight_filler { type: 'xavier' } } }
layer { name: 'relu' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
  inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
)";

// Whether backward has reached ip1, the first layer: then ip1's weight
// gradient is no longer all zeros (the solver clears the gradients before
// each iteration's forward).
bool has_gradient(const Blob& weights) {
  for (std::size_t i = 0; i < weights.count(); ++i) {
    if (weights.cpu_diff()[i] != 0) return true;
  }
  return false;
}

TEST(FirstGradientExchange, WaitsForTheWholeBackwardThenSumsOverlapAgain) {
  SolverParameter param;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "base_lr: 0.1 lr_policy: 'fixed' max_iter: 2 display: 0 random_seed: 5 "
      "snapshot_after_train: false",
      &param));
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kNet, param.mutable_net_param()));
  testing::TwoEqualReplicas recording;
  SolverOptions options;
  options.verbose_nets = false;
  options.communicator = &recording;
  options.gradient_bucket_bytes = 1;  // a bucket per parameter: several sums
  std::unique_ptr<Solver> solver = create_solver(param, options);
  const Net& net = solver->net();
  const Blob* ip1_weights = nullptr;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (net.layer_names()[i] == "ip1") ip1_weights = net.layers()[i]->blobs()[0].get();
  }
  ASSERT_NE(ip1_weights, nullptr);
  // For every sum started: whether backward had already reached ip1.
  std::vector<bool> backward_had_reached_ip1;
  recording.on_start = [&](std::size_t) {
    backward_had_reached_ip1.push_back(has_gradient(*ip1_weights));
  };

  solver->step(1);
  const std::vector<bool> first = backward_had_reached_ip1;
  ASSERT_FALSE(first.empty());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_TRUE(first[i]) << "sum " << i << " of the first iteration started during backward";
  }

  backward_had_reached_ip1.clear();
  solver->step(1);
  const std::vector<bool> second = backward_had_reached_ip1;
  ASSERT_EQ(second.size(), first.size());
  EXPECT_FALSE(second.front()) << "the second iteration's first sum (the loss and ip2's "
                                  "gradients) should start before backward reaches ip1";
}

}  // namespace
}  // namespace xtrain

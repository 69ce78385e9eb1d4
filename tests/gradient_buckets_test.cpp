// GradientBuckets: the plan (every parameter once, in the order backward
// finishes them, a small first bucket), sums that start while backward goes
// on (and not before a shared parameter is final), and the averages.
#include "solvers/gradient_buckets.hpp"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "test_net_text.hpp"
#include "two_equal_replicas.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

// data -> ip1 (64x256 weights) -> relu -> ip2 -> ip3 -> loss, where ip2 and
// ip3 share their weights ('shared'), so the shared weights are final only
// after ip2, the lower of the two.
const std::string kNet = R"(
name: 'buckets'
)" + testing::random_data_and_labels({4, 256}, "type: 'constant' value: 1") +
                         R"(
layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'
  inner_product_param { num_output: 64 weight_filler { type: 'xavier' } bias_filler { type: 'constant' value: 0.1 } } }
layer { name: 'relu' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
  param { name: 'shared' } param { name: 'b2' }
  inner_product_param { num_output: 64 weight_filler { type: 'xavier' } } }
layer { name: 'ip3' type: 'InnerProduct' bottom: 'ip2' top: 'ip3'
  param { name: 'shared' } param { name: 'b3' }
  inner_product_param { num_output: 64 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip3' bottom: 'label' top: 'loss' }
)";

std::unique_ptr<Net> make_net(std::uint64_t seed) {
  NetParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kNet, &param));
  param.mutable_state()->set_phase(TRAIN);
  NetOptions options;
  options.random_seed = seed;
  options.verbose = false;
  return std::make_unique<Net>(param, options);
}

int layer_index(const Net& net, const std::string& name) {
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (net.layer_names()[i] == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no layer " << name;
  return -1;
}

// The learnable id of layer `name`'s blob k.
int learnable_id(const Net& net, const std::string& name, int k) {
  std::size_t entry = 0;
  for (std::size_t i = 0; i < net.layers().size(); ++i) {
    if (net.layer_names()[i] == name) return net.learnable_param_ids()[entry + k];
    entry += net.layers()[i]->blobs().size();
  }
  ADD_FAILURE() << "no layer " << name;
  return -1;
}

TEST(GradientBuckets, EveryParameterOnceInTheOrderBackwardFinishesThem) {
  auto net = make_net(1);
  GradientBuckets buckets(*net, /*bucket_bytes=*/1);  // a bucket per parameter
  std::vector<int> order;
  for (std::size_t b = 0; b < buckets.bucket_count(); ++b) {
    for (int id : buckets.bucket_params(b)) order.push_back(id);
  }
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(net->learnable_params().size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  EXPECT_EQ(sorted, all);
  // ip3's bias first (backward reaches it first), then ip2's (with the
  // shared weights, final only after ip2), then ip1's.
  const std::vector<int> expected = {learnable_id(*net, "ip3", 1), learnable_id(*net, "ip2", 0),
                                     learnable_id(*net, "ip2", 1), learnable_id(*net, "ip1", 0),
                                     learnable_id(*net, "ip1", 1)};
  EXPECT_EQ(order, expected);
}

TEST(GradientBuckets, TheFirstBucketIsSmallAndTheOthersFillUp) {
  auto net = make_net(1);
  GradientBuckets buckets(*net);  // 25 MiB, the first at most 1 MiB
  // The whole net is ~82 KB: one bucket. With 40 KB buckets: the first
  // holds ip3's bias and ip2's weights and bias (16.6 KB), ip1's weights
  // (64 KB) are over the cap alone.
  EXPECT_EQ(buckets.bucket_count(), 1u);
  GradientBuckets small(*net, 40 << 10);
  ASSERT_EQ(small.bucket_count(), 3u);
  EXPECT_EQ(small.bucket_params(0).size(), 3u);
  EXPECT_EQ(small.bucket_params(1), std::vector<int>{learnable_id(*net, "ip1", 0)});
  EXPECT_EQ(small.bucket_params(2), std::vector<int>{learnable_id(*net, "ip1", 1)});
}

TEST(GradientBuckets, SumsStartWhileBackwardGoesOnAndNotBeforeAParameterIsFinal) {
  auto net = make_net(1);
  auto reference = make_net(1);
  reference->clear_param_diffs();
  const float reference_loss = reference->forward_backward();

  GradientBuckets buckets(*net, /*bucket_bytes=*/1);
  // For each sum started: how many layers backward had finished, its size.
  testing::TwoEqualReplicas recording;
  int layers_done = 0;
  std::vector<int> layers_done_at_start;
  std::vector<std::size_t> counts;
  recording.on_start = [&](std::size_t count) {
    layers_done_at_start.push_back(layers_done);
    counts.push_back(count);
  };
  net->clear_param_diffs();
  const float loss = net->forward();
  buckets.begin(recording, Device::cpu(), loss);
  const int layers = static_cast<int>(net->layers().size());
  net->backward([&](int layer) {
    ++layers_done;
    buckets.layer_done(layer);
  });
  EXPECT_FLOAT_EQ(buckets.finish(), reference_loss);  // doubled, then halved

  // Sums started as the loss and ip3 (2 layers done), ip2 (3) and ip1 (5)
  // finished, not all at the end of backward (6 layers).
  const int ip2_done = layers - layer_index(*net, "ip2");
  const int ip1_done = layers - layer_index(*net, "ip1");
  EXPECT_EQ(layers_done_at_start,
            (std::vector<int>{2, ip2_done, ip2_done, ip1_done, ip1_done}));
  // The first carries the loss too.
  EXPECT_EQ(counts.front(), 1u + 64u);
  // The averages of two equal replicas are the gradients themselves.
  for (std::size_t i = 0; i < net->learnable_params().size(); ++i) {
    const Blob& mine = *net->learnable_params()[i];
    const Blob& theirs = *reference->learnable_params()[i];
    for (std::size_t k = 0; k < mine.count(); ++k) {
      ASSERT_EQ(mine.cpu_diff()[k], theirs.cpu_diff()[k]) << "param " << i << " value " << k;
    }
  }
}

TEST(GradientBuckets, TwoReplicasGetTheMeanOfTheirGradientsAndLosses) {
  // Different seeds: different data and weights, so different gradients.
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::vector<std::vector<float>>> own(2);
  std::vector<float> own_loss(2);
  for (int rank = 0; rank < 2; ++rank) {
    nets.push_back(make_net(100 + rank));
    own_loss[rank] = nets[rank]->forward_backward();
    for (const Blob* param : nets[rank]->learnable_params()) {
      own[rank].emplace_back(param->cpu_diff(), param->cpu_diff() + param->count());
    }
  }
  for (std::size_t i = 0; i < nets[0]->learnable_params().size(); ++i) {
    ASSERT_EQ(own[0][i].size(), own[1][i].size());
  }
  ThreadReplicas group(2, 30);
  std::vector<float> mean_loss(2);
  group.run([&](int rank) {
    Net& net = *nets[static_cast<std::size_t>(rank)];
    GradientBuckets buckets(net, /*bucket_bytes=*/256);
    buckets.begin(group.communicator(rank), Device::cpu(), own_loss[rank]);
    net.backward([&](int layer) { buckets.layer_done(layer); });  // diffs: twice the gradient
    mean_loss[rank] = buckets.finish();
  });
  EXPECT_EQ(mean_loss[0], (own_loss[0] + own_loss[1]) * 0.5f);
  EXPECT_EQ(mean_loss[1], mean_loss[0]);
  for (std::size_t i = 0; i < nets[0]->learnable_params().size(); ++i) {
    for (std::size_t k = 0; k < own[0][i].size(); ++k) {
      // The second backward added the same gradient again: 2 g_r per replica
      // (up to the GEMM's rounding when it accumulates).
      const float expected = (2 * own[0][i][k] + 2 * own[1][i][k]) * 0.5f;
      ASSERT_NEAR(nets[0]->learnable_params()[i]->cpu_diff()[k], expected,
                  1e-5f * std::max(1.0f, std::fabs(expected)));
      ASSERT_EQ(nets[1]->learnable_params()[i]->cpu_diff()[k],
                nets[0]->learnable_params()[i]->cpu_diff()[k]);
    }
  }
}

// The buffer holds every gradient of the net: past 2^31 - 1 values (a
// Blob's dimension is an int) it is shaped in rows, never smaller than
// asked and never wrapping.
TEST(GradientBuckets, BufferShapesHoldAnySizeWithoutWrapping) {
  constexpr std::size_t kInt = std::numeric_limits<int>::max();
  EXPECT_EQ(gradient_buffer_shape(10), std::vector<int>({10}));
  EXPECT_EQ(gradient_buffer_shape(kInt), std::vector<int>({static_cast<int>(kInt)}));
  for (const std::size_t values : {kInt + 1, std::size_t{5'000'000'003}, std::size_t{1} << 40}) {
    const std::vector<int> shape = gradient_buffer_shape(values);
    std::size_t count = 1;
    for (int dimension : shape) {
      ASSERT_GT(dimension, 0) << values;
      count *= static_cast<std::size_t>(dimension);
    }
    EXPECT_GE(count, values);
    EXPECT_LT(count - values, std::size_t{1} << 16) << values;
  }
}

}  // namespace
}  // namespace xtrain

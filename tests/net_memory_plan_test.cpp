// The activation memory plan (core/net_memory_plan.hpp): a net that shares
// storage computes bit for bit what a net without the plan computes, never
// gives one storage to two blobs live at the same step, and allocates nothing
// once its first iteration has run.
#include "core/net_memory_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/activation_packing.hpp"
#include "storage_test_support.hpp"
#include "test_net_text.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/synced_memory.hpp"

namespace xtrain {
namespace {

// LeNet's shape, small, with an in-place ReLU and Dropout and an Accuracy
// that reads ip1 and the labels through Splits: its branch never gets a
// gradient, so the Split's top for it has a diff that must stay zero (and
// whose life is disjoint from ip2's diff, which the plan must not exploit).
const std::string kLenetLike = R"(
  name: "lenet_like"
)" + testing::random_data_and_labels({3, 1, 13, 13}, "type: 'constant' value: 2") +
                               R"(
  layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
          convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" }
                              bias_filler { type: "gaussian" std: 0.1 } } }
  layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
          pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
  layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
          convolution_param { num_output: 5 kernel_size: 2 weight_filler { type: "xavier" } } }
  layer { name: "pool2" type: "Pooling" bottom: "conv2" top: "pool2"
          pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
  layer { name: "ip1" type: "InnerProduct" bottom: "pool2" top: "ip1"
          inner_product_param { num_output: 7 weight_filler { type: "xavier" } } }
  layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
  layer { name: "drop1" type: "Dropout" bottom: "ip1" top: "ip1" }
  layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2"
          inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
  layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
  layer { name: "accuracy" type: "Accuracy" bottom: "ip1" bottom: "label" top: "accuracy" }
)";

// Two ResNet bottleneck-style blocks: Convolution with in-place BatchNorm,
// Scale and ReLU, a projection branch, Split and Eltwise sums; the first
// convolution has `first` outputs, the blocks `narrow` inside and `wide` out.
std::string resnet_like(int first = 6, int narrow = 4, int wide = 8) {
  auto conv_bn = [](const std::string& name, const std::string& bottom, int outputs, int kernel,
                    int pad, bool relu) {
    std::string text = "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom +
                       "' top: '" + name +
                       "' convolution_param { num_output: " + std::to_string(outputs) +
                       " kernel_size: " + std::to_string(kernel) + " pad: " + std::to_string(pad) +
                       " bias_term: false weight_filler { type: 'msra' } } }\n";
    text += "layer { name: 'bn_" + name + "' type: 'BatchNorm' bottom: '" + name + "' top: '" +
            name + "' }\n";
    text += "layer { name: 'scale_" + name + "' type: 'Scale' bottom: '" + name + "' top: '" +
            name +
            "' scale_param { bias_term: true filler { type: 'gaussian' mean: 1 std: 0.1 } "
            "bias_filler { type: 'gaussian' std: 0.1 } } }\n";
    if (relu) {
      text += "layer { name: 'relu_" + name + "' type: 'ReLU' bottom: '" + name + "' top: '" +
              name + "' }\n";
    }
    return text;
  };
  std::string text = R"(
    name: "resnet_like"
)" + testing::random_data_and_labels({2, 3, 9, 9}, "type: 'constant' value: 1") +
                     R"(
  )";
  text += conv_bn("conv1", "data", first, 3, 1, true);
  std::string input = "conv1";
  for (const std::string block : {"a", "b"}) {
    const std::string shortcut = block == "a" ? "res" + block + "_branch1" : input;
    if (block == "a") text += conv_bn(shortcut, input, wide, 1, 0, false);
    text += conv_bn("res" + block + "_branch2a", input, narrow, 1, 0, true);
    text += conv_bn("res" + block + "_branch2b", "res" + block + "_branch2a", narrow, 3, 1, true);
    text += conv_bn("res" + block + "_branch2c", "res" + block + "_branch2b", wide, 1, 0, false);
    text += "layer { name: 'res" + block + "' type: 'Eltwise' bottom: '" + shortcut +
            "' bottom: 'res" + block + "_branch2c' top: 'res" + block + "' }\n";
    text += "layer { name: 'res" + block + "_relu' type: 'ReLU' bottom: 'res" + block +
            "' top: 'res" + block + "' }\n";
    input = "res" + block;
  }
  text += R"(
    layer { name: "pool" type: "Pooling" bottom: "resb" top: "pool"
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
            inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
  )";
  return text;
}

std::unique_ptr<Net> make_net(const std::string& text, Phase phase, bool share,
                              const std::vector<std::string>& keep = {},
                              std::optional<NumberType> precision = std::nullopt) {
  NetOptions options;
  options.random_seed = 11;
  options.share_activation_memory = share;
  options.keep_blobs = keep;
  options.precision = precision;
  return testing::make_quiet_net(text, phase, options);
}

using testing::same_bits;

// Runs both nets in lockstep and compares outputs and parameter gradients
// bit for bit.
void expect_identical_runs(const std::string& text, Phase phase,
                           std::optional<NumberType> precision = std::nullopt) {
  auto plain = make_net(text, phase, false, {}, precision);
  auto shared = make_net(text, phase, true, {}, precision);
  const bool diffs = phase == TRAIN;
  // The plan must have shared something, or this test proves nothing.
  ASSERT_LT(testing::blob_storage_bytes(*shared, diffs), testing::blob_storage_bytes(*plain, diffs));
  for (int iteration = 0; iteration < 3; ++iteration) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    plain->clear_param_diffs();
    shared->clear_param_diffs();
    const float plain_loss = phase == TRAIN ? plain->forward_backward() : plain->forward();
    const float shared_loss = phase == TRAIN ? shared->forward_backward() : shared->forward();
    EXPECT_TRUE(same_bits(&plain_loss, &shared_loss, 1)) << plain_loss << " vs " << shared_loss;
    ASSERT_EQ(plain->output_blobs().size(), shared->output_blobs().size());
    for (std::size_t i = 0; i < plain->output_blobs().size(); ++i) {
      const Blob& a = *plain->output_blobs()[i];
      const Blob& b = *shared->output_blobs()[i];
      ASSERT_EQ(a.count(), b.count());
      EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count())) << "output " << i;
    }
    ASSERT_EQ(plain->learnable_params().size(), shared->learnable_params().size());
    for (std::size_t i = 0; i < plain->learnable_params().size(); ++i) {
      const Blob& a = *plain->learnable_params()[i];
      const Blob& b = *shared->learnable_params()[i];
      EXPECT_TRUE(same_bits(a.cpu_data(), b.cpu_data(), a.count())) << "param " << i;
      if (phase == TRAIN) {
        EXPECT_TRUE(same_bits(a.cpu_diff(), b.cpu_diff(), a.count())) << "param diff " << i;
        if (plain->params_lr()[i] != 0) {
          EXPECT_GT(a.asum_diff(), 0.0) << "param diff " << i;
        }
      }
    }
  }
}

TEST(NetMemoryPlan, LenetLikeTrainIsBitIdentical) { expect_identical_runs(kLenetLike, TRAIN); }
TEST(NetMemoryPlan, LenetLikeTestIsBitIdentical) { expect_identical_runs(kLenetLike, TEST); }
TEST(NetMemoryPlan, ResnetLikeTrainIsBitIdentical) { expect_identical_runs(resnet_like(), TRAIN); }
TEST(NetMemoryPlan, ResnetLikeTestIsBitIdentical) { expect_identical_runs(resnet_like(), TEST); }

// The same with every convolution on oneDNN (the nets above are small enough
// for the GEMM engine), when the build has it.
TEST(NetMemoryPlan, ResnetLikeOnOnednnIsBitIdentical) {
  testing::ScopedConvImpl onednn("onednn");
  expect_identical_runs(resnet_like(), TRAIN);
  expect_identical_runs(resnet_like(), TEST);
  // Wide enough for channel-blocked activations: the values recomputed in
  // backward go back in the layout forward wrote them in, whatever layout
  // the blobs that shared their storage meanwhile left there.
  expect_identical_runs(resnet_like(32, 16, 32), TRAIN);
}

// In 16 bits, the values that wait from forward to backward wait packed
// (NetMemoryPlan::packs): the plan packs some in these nets, none in fp32,
// and the iterations give the same bits with the plan as without.
std::size_t packs_planned(const std::string& text, std::optional<NumberType> precision) {
  auto net = make_net(text, TRAIN, false, {}, precision);
  return plan_net_memory(*net, {}).packs.size();
}

TEST(NetMemoryPlan, SixteenBitValuesWaitPackedBetweenThePasses) {
  EXPECT_EQ(packs_planned(kLenetLike, std::nullopt), 0u);
  EXPECT_GT(packs_planned(kLenetLike, NumberType::kBfloat16), 0u);
  EXPECT_GT(packs_planned(kLenetLike, NumberType::kFloat16), 0u);
  EXPECT_EQ(packs_planned(resnet_like(), std::nullopt), 0u);
  EXPECT_GT(packs_planned(resnet_like(), NumberType::kBfloat16), 0u);
}

// The packed values' own places are overwritten with nan once packed, as
// other blobs may overwrite them, so a value that did not come back shows.
struct PoisonPackedPlaces {
  PoisonPackedPlaces() { set_poison_packed_places_for_testing(true); }
  ~PoisonPackedPlaces() { set_poison_packed_places_for_testing(false); }
};

TEST(NetMemoryPlan, LenetLikeTrainInBfloat16IsBitIdentical) {
  PoisonPackedPlaces poison;
  expect_identical_runs(kLenetLike, TRAIN, NumberType::kBfloat16);
}
TEST(NetMemoryPlan, ResnetLikeTrainInFloat16IsBitIdentical) {
  PoisonPackedPlaces poison;
  expect_identical_runs(resnet_like(), TRAIN, NumberType::kFloat16);
}
TEST(NetMemoryPlan, ResnetLikeOnOnednnInBfloat16IsBitIdentical) {
  testing::ScopedConvImpl onednn("onednn");
  PoisonPackedPlaces poison;
  expect_identical_runs(resnet_like(32, 16, 32), TRAIN, NumberType::kBfloat16);
}

// Each blob's live steps, worked out here from the schedule of the net
// without the plan (where only legitimately aliased blobs share storage):
// in backward, the steps whose layer reads the blob as a top or writes it as
// a propagated bottom; in a forward-only net, the steps whose layer reads or
// writes it.
std::vector<std::set<int>> live_steps(const Net& net, bool diff) {
  std::vector<std::set<int>> steps(net.blobs().size());
  const int layers = static_cast<int>(net.layers().size());
  int step = 0;
  for (int i = 0; i < layers; ++i) {
    const int layer = diff ? layers - 1 - i : i;
    if (diff && !net.layer_needs_backward(layer)) continue;
    for (int top : net.top_id_vecs()[layer]) steps[top].insert(step);
    const auto& bottoms = net.bottom_id_vecs()[layer];
    for (std::size_t b = 0; b < bottoms.size(); ++b) {
      if (!diff || net.bottom_need_backward()[layer][b]) steps[bottoms[b]].insert(step);
    }
    ++step;
  }
  return steps;
}

// Two blobs that share storage in the planned net but not in the plain one
// must never be live at one step, counting the steps between a blob's first
// and last use (its value has to survive them) -- except a gradient computed
// in place of its top's (plan_gradients_in_place), which meet at the step of
// the layer that reads one and writes the other.
void expect_no_live_overlap(const std::string& text, Phase phase) {
  const bool diff = phase == TRAIN;
  auto plain = make_net(text, phase, false);
  auto shared = make_net(text, phase, true);
  const auto steps = live_steps(*plain, diff);
  std::set<std::pair<int, int>> in_place;  // (top, bottom)
  for (const GradientInPlace& pair : plan_gradients_in_place(*plain, {})) {
    in_place.insert({pair.top, pair.bottom});
  }
  auto shares = [&](const Net& net, int a, int b) {
    return testing::blobs_share_storage(net, a, b, diff);
  };
  int newly_shared_pairs = 0;
  const int blobs = static_cast<int>(plain->blobs().size());
  for (int a = 0; a < blobs; ++a) {
    for (int b = a + 1; b < blobs; ++b) {
      if (!shares(*shared, a, b)) continue;
      if (shares(*plain, a, b)) continue;
      ++newly_shared_pairs;
      ASSERT_FALSE(steps[a].empty() || steps[b].empty())
          << plain->blob_names()[a] << " / " << plain->blob_names()[b];
      const bool disjoint =
          *steps[a].rbegin() < *steps[b].begin() || *steps[b].rbegin() < *steps[a].begin();
      const bool meet_in_place =
          diff && ((in_place.count({a, b}) && *steps[a].rbegin() == *steps[b].begin()) ||
                   (in_place.count({b, a}) && *steps[b].rbegin() == *steps[a].begin()));
      EXPECT_TRUE(disjoint || meet_in_place) << plain->blob_names()[a] << " and " << plain->blob_names()[b]
                            << " share storage while both are live";
    }
  }
  EXPECT_GT(newly_shared_pairs, 0);
  // Outputs, inputs and losses keep their own storage.
  for (int output : shared->output_blob_indices()) {
    for (int other = 0; other < blobs; ++other) {
      if (other == output || shares(*plain, other, output)) continue;
      EXPECT_FALSE(shares(*shared, other, output))
          << "output " << shared->blob_names()[output];
    }
  }
}

TEST(NetMemoryPlan, LenetLikeTrainSharesNoLiveDiffs) { expect_no_live_overlap(kLenetLike, TRAIN); }
TEST(NetMemoryPlan, LenetLikeTestSharesNoLiveData) { expect_no_live_overlap(kLenetLike, TEST); }
TEST(NetMemoryPlan, ResnetLikeTrainSharesNoLiveDiffs) {
  expect_no_live_overlap(resnet_like(), TRAIN);
}
TEST(NetMemoryPlan, ResnetLikeTestSharesNoLiveData) { expect_no_live_overlap(resnet_like(), TEST); }

// ResNet's Splits and Eltwise sums compute a bottom's gradient in their
// top's storage; the training above (ResnetLikeTrainIsBitIdentical) runs with
// them. Here: which pairs, that they really share, and that the gradient
// storage of the whole net shrinks by them.
TEST(NetMemoryPlan, SplitAndEltwiseSumComputeGradientsInTheirTopsStorage) {
  auto plain = make_net(resnet_like(), TRAIN, false);
  std::set<std::string> layers;
  for (const GradientInPlace& pair : plan_gradients_in_place(*plain, {})) {
    layers.insert(plain->layers()[pair.layer]->type());
    EXPECT_EQ(plain->blobs()[pair.bottom]->count(), plain->blobs()[pair.top]->count());
  }
  EXPECT_EQ(layers, (std::set<std::string>{"Eltwise", "Split"}));
  auto shared = make_net(resnet_like(), TRAIN, true);
  for (const GradientInPlace& pair : plan_gradients_in_place(*plain, {})) {
    EXPECT_TRUE(testing::blobs_share_storage(*shared, pair.bottom, pair.top, true))
        << shared->blob_names()[pair.bottom] << " / " << shared->blob_names()[pair.top];
  }
  // A kept blob stays out, and so does its pair.
  const std::string kept = plain->blob_names()[plan_gradients_in_place(*plain, {}).front().top];
  auto keeping = make_net(resnet_like(), TRAIN, false);
  for (const GradientInPlace& pair : plan_gradients_in_place(*keeping, {kept})) {
    EXPECT_NE(keeping->blob_names()[pair.top], kept);
    EXPECT_NE(keeping->blob_names()[pair.bottom], kept);
  }
}

// An Eltwise sum whose first bottom has coefficient 2 cannot find its
// gradient in the top's; the next bottom of coefficient 1 can.
TEST(NetMemoryPlan, EltwiseSumComputesInPlaceOnlyABottomOfCoefficientOne) {
  const std::string text = R"(
    name: "weighted_sum"
)" + testing::random_data_and_labels({2, 3, 4, 4}, "type: 'constant' value: 1") +
                           R"(
    layer { name: "a" type: "Convolution" bottom: "data" top: "a"
            convolution_param { num_output: 2 kernel_size: 1 weight_filler { type: "xavier" } } }
    layer { name: "b" type: "Convolution" bottom: "data" top: "b"
            convolution_param { num_output: 2 kernel_size: 1 weight_filler { type: "xavier" } } }
    layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "sum"
            eltwise_param { operation: SUM coeff: 2 coeff: 1 } }
    layer { name: "fc" type: "InnerProduct" bottom: "sum" top: "fc"
            inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "fc" bottom: "label" top: "loss" }
  )";
  auto plain = make_net(text, TRAIN, false);
  std::vector<std::string> bottoms;
  for (const GradientInPlace& pair : plan_gradients_in_place(*plain, {})) {
    if (std::string(plain->layers()[pair.layer]->type()) == "Eltwise") {
      bottoms.push_back(plain->blob_names()[pair.bottom]);
    }
  }
  EXPECT_EQ(bottoms, std::vector<std::string>{"b"});
  expect_identical_runs(text, TRAIN);
}

TEST(NetMemoryPlan, KeepsNamedBlobsAndUnwrittenDiffsApart) {
  auto plain = make_net(kLenetLike, TRAIN, false);
  auto shared = make_net(kLenetLike, TRAIN, true, {"pool1"});
  // pool1 was asked for; the Split tops feeding Accuracy get no gradient, so
  // their diffs must stay zero.
  std::set<int> kept = {static_cast<int>(
      std::find(shared->blob_names().begin(), shared->blob_names().end(), "pool1") -
      shared->blob_names().begin())};
  const auto& layer_names = shared->layer_names();
  const auto accuracy = std::find(layer_names.begin(), layer_names.end(), "accuracy");
  ASSERT_NE(accuracy, layer_names.end());
  for (int bottom : shared->bottom_id_vecs()[accuracy - layer_names.begin()]) kept.insert(bottom);
  const int blobs = static_cast<int>(shared->blobs().size());
  for (int i : kept) {
    for (int j = 0; j < blobs; ++j) {
      if (j == i || testing::blobs_share_storage(*plain, i, j, true)) continue;
      EXPECT_FALSE(testing::blobs_share_storage(*shared, i, j, true))
          << shared->blob_names()[i] << " shares its diff with " << shared->blob_names()[j];
    }
  }
  EXPECT_THROW(make_net(kLenetLike, TRAIN, true, {"no_such_blob"}), Error);
}

TEST(NetMemoryPlan, TestNetSharingDataRunsForwardOnly) {
  auto net = make_net(kLenetLike, TEST, true);
  net->forward();
  EXPECT_THROW(net->backward(), Error);
  auto plain = make_net(kLenetLike, TEST, false);
  plain->forward();
  EXPECT_NO_THROW(plain->backward());
}

TEST(NetMemoryPlan, SteadyStateIterationsAllocateNothing) {
  for (Phase phase : {TRAIN, TEST}) {
    auto net = make_net(resnet_like(), phase, true);
    auto iterate = [&] { phase == TRAIN ? net->forward_backward() : net->forward(); };
    iterate();
    const std::size_t after_first = SyncedMemory::host_allocation_count();
    for (int iteration = 2; iteration <= 5; ++iteration) iterate();
    EXPECT_EQ(SyncedMemory::host_allocation_count(), after_first)
        << (phase == TRAIN ? "TRAIN" : "TEST");
  }
  // The counter does count: a fresh blob's first write allocates.
  const std::size_t before = SyncedMemory::host_allocation_count();
  Blob blob({3, 4});
  blob.mutable_cpu_data()[0] = 1;
  EXPECT_EQ(SyncedMemory::host_allocation_count(), before + 1);
}

TEST(NetMemoryPlan, FirstFitPutsOnlyDisjointUnitsTogether) {
  // Sizes 8, 6, 5, 4, 3 live at [0,2], [3,4], [1,3], [5,6], [0,6]; unit 4 is
  // not eligible.
  const std::vector<Lifetime> lives = {
      {{0, 2}, {}}, {{3, 4}, {}}, {{1, 3}, {}}, {{5, 6}, {}}, {{0, 6}, {}}};
  const std::vector<std::size_t> bytes = {8, 6, 5, 4, 3};
  const std::vector<bool> eligible = {true, true, true, true, false};
  std::vector<std::size_t> buffer_bytes;
  const std::vector<int> buffer_of = assign_shared_buffers(lives, bytes, eligible, &buffer_bytes);
  // 8 opens buffer 0; 6 fits after it; 5 overlaps both and opens buffer 1; 4
  // fits into buffer 0 after 6.
  EXPECT_EQ(buffer_of, (std::vector<int>{0, 0, 1, 0, -1}));
  EXPECT_EQ(buffer_bytes, (std::vector<std::size_t>{8, 5}));
}

// Two-part lifetimes (values recomputed in backward) share a buffer with a
// unit that fits in the gap between the parts, and with none that overlaps
// either part.
TEST(NetMemoryPlan, FirstFitFillsTheGapOfATwoPartLifetime) {
  // Sizes 8 (live [0,1] and [6,7]), 5 ([2,5]), 4 ([1,3]), 3 ([7,8]).
  const std::vector<Lifetime> lives = {
      {{0, 1}, {6, 7}}, {{2, 5}, {}}, {{1, 3}, {}}, {{7, 8}, {}}};
  const std::vector<std::size_t> bytes = {8, 5, 4, 3};
  const std::vector<bool> eligible = {true, true, true, true};
  std::vector<std::size_t> buffer_bytes;
  const std::vector<int> buffer_of = assign_shared_buffers(lives, bytes, eligible, &buffer_bytes);
  // 5 fits between 8's parts; 4 overlaps 8's first part and 5; 3 overlaps
  // 8's second part but fits after 4.
  EXPECT_EQ(buffer_of, (std::vector<int>{0, 0, 1, 1}));
}

// The arena puts units of different sizes side by side where buffers cannot:
// A (8 bytes x 64, steps 0-1) is dead when B and C (4 x 64 each, steps 2-3)
// live, so both fit in A's place; buffers would need 8 + 4.
TEST(NetMemoryPlan, ArenaPutsSmallerUnitsSideBySideInALargerOnesPlace) {
  const std::vector<Lifetime> lives = {{{0, 1}, {}}, {{2, 3}, {}}, {{2, 3}, {}}, {{0, 3}, {}}};
  const std::vector<std::size_t> bytes = {512, 256, 256, 100};
  const std::vector<bool> eligible = {true, true, true, false};
  std::size_t arena_bytes = 0;
  const std::vector<std::ptrdiff_t> offsets =
      assign_arena_offsets(lives, bytes, eligible, &arena_bytes);
  EXPECT_EQ(arena_bytes, 512u);
  EXPECT_EQ(offsets[3], -1) << "not eligible";
  EXPECT_NE(offsets[1], offsets[2]);
  for (int unit : {1, 2}) {
    EXPECT_GE(offsets[unit], 0);
    EXPECT_LE(offsets[unit] + 256, 512);
    EXPECT_EQ(offsets[unit] % 64, 0);
  }
  std::vector<std::size_t> buffer_bytes;
  assign_shared_buffers(lives, bytes, eligible, &buffer_bytes);
  EXPECT_EQ(buffer_bytes, (std::vector<std::size_t>{512, 256}));
}

// Units whose places overlap are never live together, on a random mix of
// sizes and (two-part) lifetimes; sizes are rounded up to 64 bytes.
TEST(NetMemoryPlan, ArenaNeverOverlapsUnitsLiveTogether) {
  std::vector<Lifetime> lives;
  std::vector<std::size_t> bytes;
  unsigned state = 12345;
  auto next = [&](unsigned bound) {
    state = state * 1103515245u + 12345u;
    return (state >> 8) % bound;
  };
  for (int unit = 0; unit < 60; ++unit) {
    const int first = static_cast<int>(next(40));
    Lifetime life{{first, first + static_cast<int>(next(10))}, {}};
    if (next(3) == 0) {
      const int second = life.first.last + 1 + static_cast<int>(next(20));
      life.second = {second, second + static_cast<int>(next(5))};
    }
    lives.push_back(life);
    bytes.push_back(1 + next(5000));
  }
  const std::vector<bool> eligible(lives.size(), true);
  std::size_t arena_bytes = 0;
  const auto offsets = assign_arena_offsets(lives, bytes, eligible, &arena_bytes);
  std::size_t most_live = 0;
  for (int step = 0; step < 80; ++step) {
    std::size_t live = 0;
    for (std::size_t u = 0; u < lives.size(); ++u) {
      const Lifetime point{{step, step}, {}};
      if (lives[u].overlaps(point)) live += (bytes[u] + 63) / 64 * 64;
    }
    most_live = std::max(most_live, live);
  }
  EXPECT_GE(arena_bytes, most_live);
  for (std::size_t a = 0; a < lives.size(); ++a) {
    ASSERT_GE(offsets[a], 0);
    EXPECT_LE(static_cast<std::size_t>(offsets[a]) + bytes[a], arena_bytes);
    for (std::size_t b = a + 1; b < lives.size(); ++b) {
      const bool places_overlap = offsets[a] < offsets[b] + static_cast<std::ptrdiff_t>(bytes[b]) &&
                                  offsets[b] < offsets[a] + static_cast<std::ptrdiff_t>(bytes[a]);
      if (places_overlap) {
        EXPECT_FALSE(lives[a].overlaps(lives[b])) << a << " and " << b;
      }
    }
  }
}

// In a training net the outputs of the Convolution -> BatchNorm -> Scale ->
// ReLU chains that feed the next convolution are recomputed in backward from
// BatchNorm's copy, so their storage serves others in between (the bits are
// checked by ResnetLikeTrainIsBitIdentical).
TEST(NetMemoryPlan, ResnetLikeTrainRecomputesTheChainsThatFeedConvolutions) {
  auto plain = make_net(resnet_like(), TRAIN, false);
  auto shared = make_net(resnet_like(), TRAIN, true);
  const auto& names = shared->blob_names();
  const int chain = static_cast<int>(std::find(names.begin(), names.end(), "resa_branch2a") -
                                     names.begin());
  ASSERT_LT(chain, static_cast<int>(names.size()));
  int sharers = 0;
  for (std::size_t other = 0; other < shared->blobs().size(); ++other) {
    if (static_cast<int>(other) != chain &&
        testing::blobs_share_storage(*shared, static_cast<int>(other), chain, false)) {
      ++sharers;
    }
  }
  EXPECT_GT(sharers, 0) << "resa_branch2a keeps its values through to backward";
  // Without the plan nothing shares that storage.
  for (std::size_t other = 0; other < plain->blobs().size(); ++other) {
    if (static_cast<int>(other) == chain) continue;
    EXPECT_FALSE(testing::blobs_share_storage(*plain, static_cast<int>(other), chain, false));
  }
}

// A block's output (the Eltwise sum + ReLU) is recomputed from its bottoms:
// block a's from its two Scale outputs, which are dead by then and are
// recomputed first, at the same step, in forward order.
TEST(NetMemoryPlan, ResnetLikeTrainRecomputesBlockOutputsFromTheirBranches) {
  auto net = make_net(resnet_like(), TRAIN, false);
  const NetMemoryPlan plan = plan_net_memory(*net, {});
  auto recompute_of = [&](const std::string& layer) {
    for (std::size_t i = 0; i < plan.recomputes.size(); ++i) {
      if (net->layer_names()[plan.recomputes[i].layer] == layer) return static_cast<int>(i);
    }
    return -1;
  };
  const int sum = recompute_of("resa");
  ASSERT_GE(sum, 0) << "block a's output is kept through to backward";
  for (const char* branch : {"scale_resa_branch1", "scale_resa_branch2c"}) {
    const int scale = recompute_of(branch);
    ASSERT_GE(scale, 0) << branch << " is not recomputed for the sum";
    EXPECT_LT(scale, sum) << branch << " must come back before the sum that reads it";
    EXPECT_EQ(plan.recomputes[scale].before_backward_of, plan.recomputes[sum].before_backward_of)
        << branch;
  }
  // Block b reads block a's output: a comes back no later than b.
  const int next = recompute_of("resb");
  if (next >= 0) {
    EXPECT_GE(plan.recomputes[sum].before_backward_of, plan.recomputes[next].before_backward_of);
  }
}

}  // namespace
}  // namespace xtrain

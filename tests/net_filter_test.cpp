// Choosing layers by net state: phase, level and stage rules.
#include <gtest/gtest.h>

#include "error_message.hpp"
#include "proto_text.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

NetParameter parse_net(const std::string& text) { return testing::parse<NetParameter>(text); }

std::vector<std::string> layer_names(const NetParameter& param) {
  std::vector<std::string> names;
  for (const auto& layer : param.layer()) names.push_back(layer.name());
  return names;
}

const char* kRuleNet = R"(
  layer { name: "always" type: "Input" }
  layer { name: "train_only" type: "Input" include { phase: TRAIN } }
  layer { name: "test_only" type: "Input" include { phase: TEST } }
  layer { name: "not_test" type: "Input" exclude { phase: TEST } }
  layer { name: "level_1_to_2" type: "Input" include { min_level: 1 max_level: 2 } }
  layer { name: "stage_a" type: "Input" include { stage: "a" } }
  layer { name: "stage_a_and_b" type: "Input" include { stage: "a" stage: "b" } }
  layer { name: "stage_a_or_b" type: "Input" include { stage: "a" } include { stage: "b" } }
  layer { name: "not_stage_a" type: "Input" include { not_stage: "a" } }
)";

TEST(NetFilter, ByPhase) {
  NetParameter param = parse_net(kRuleNet);
  param.mutable_state()->set_phase(TRAIN);
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "train_only", "not_test", "not_stage_a"}));
  param.mutable_state()->set_phase(TEST);
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "test_only", "not_stage_a"}));
}

TEST(NetFilter, ByLevel) {
  NetParameter param = parse_net(kRuleNet);
  param.mutable_state()->set_phase(TEST);
  param.mutable_state()->set_level(2);
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "test_only", "level_1_to_2", "not_stage_a"}));
  param.mutable_state()->set_level(3);
  EXPECT_EQ(layer_names(filter_net(param)).size(), 3u);
}

TEST(NetFilter, ByStage) {
  NetParameter param = parse_net(kRuleNet);
  param.mutable_state()->set_phase(TEST);
  param.mutable_state()->add_stage("a");
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "test_only", "stage_a", "stage_a_or_b"}));
  param.mutable_state()->add_stage("b");
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "test_only", "stage_a", "stage_a_and_b",
                                      "stage_a_or_b"}));
  param.mutable_state()->clear_stage();
  param.mutable_state()->add_stage("b");
  EXPECT_EQ(layer_names(filter_net(param)),
            (std::vector<std::string>{"always", "test_only", "stage_a_or_b", "not_stage_a"}));
}

TEST(NetFilter, IncludeAndExcludeTogetherIsAnError) {
  const NetParameter param =
      parse_net(R"(layer { name: "both" type: "Input" include { phase: TRAIN } exclude { phase: TEST } })");
  testing::expect_error([&] { filter_net(param); }, {"'both'"});
}

TEST(NetSplits, FanOutGetsASplitLayerWithCaffeNames) {
  const NetParameter param = parse_net(R"(
    layer { name: "data" type: "Input" top: "data" }
    layer { name: "a" type: "ReLU" bottom: "data" top: "a" }
    layer { name: "b" type: "ReLU" bottom: "data" top: "b" }
  )");
  const NetParameter split = insert_splits(param);
  ASSERT_EQ(split.layer_size(), 4);
  EXPECT_EQ(split.layer(1).name(), "data_data_0_split");
  EXPECT_EQ(split.layer(1).type(), "Split");
  EXPECT_EQ(split.layer(1).bottom(0), "data");
  ASSERT_EQ(split.layer(1).top_size(), 2);
  EXPECT_EQ(split.layer(1).top(0), "data_data_0_split_0");
  EXPECT_EQ(split.layer(1).top(1), "data_data_0_split_1");
  EXPECT_EQ(split.layer(2).bottom(0), "data_data_0_split_0");
  EXPECT_EQ(split.layer(3).bottom(0), "data_data_0_split_1");
}

TEST(NetSplits, SingleReaderAndInPlaceChainsGetNone) {
  const NetParameter param = parse_net(R"(
    layer { name: "data" type: "Input" top: "data" }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" }
    layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" top: "loss" }
  )");
  EXPECT_EQ(insert_splits(param).layer_size(), 4);
}

TEST(NetSplits, LossOutputAlsoReadElsewhereKeepsItsWeightOnTheFirstSplit) {
  const NetParameter param = parse_net(R"(
    layer { name: "data" type: "Input" top: "data" }
    layer { name: "l" type: "ReLU" bottom: "data" top: "l" loss_weight: 2 }
    layer { name: "reader" type: "ReLU" bottom: "l" top: "r" }
  )");
  const NetParameter split = insert_splits(param);
  ASSERT_EQ(split.layer_size(), 4);
  EXPECT_EQ(split.layer(1).loss_weight_size(), 0);
  const LayerParameter& splitter = split.layer(2);
  ASSERT_EQ(splitter.top_size(), 2);
  ASSERT_EQ(splitter.loss_weight_size(), 2);
  EXPECT_EQ(splitter.loss_weight(0), 2.0f);
  EXPECT_EQ(splitter.loss_weight(1), 0.0f);
  EXPECT_EQ(split.layer(3).bottom(0), "l_l_0_split_1");
}

TEST(NetSplits, UnknownBottomNamesTheLayer) {
  const NetParameter param = parse_net(R"(
    layer { name: "data" type: "Input" top: "data" }
    layer { name: "conv1" type: "Convolution" bottom: "dta" top: "conv1" }
  )");
  testing::expect_error([&] { insert_splits(param); }, {"'conv1'", "'dta'"});
}

}  // namespace
}  // namespace xtrain

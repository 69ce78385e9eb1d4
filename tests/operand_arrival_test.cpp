// The types a layer's bottoms and its tops' gradients arrive in
// (Layer::bottom_arrives_in, top_gradient_arrives_in), and the copies of
// product operands that a 16-bit layer then skips (RoundedOperand): values
// a writer stored in the type already are multiplied as they are.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "test_net_text.hpp"
#include "xtrain/net.hpp"
#include "xtrain/precision.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// Exact data into two convolutions and an inner product; `relu_precision`
// goes into the ReLU between the convolutions (a per-layer override).
std::string net_text(const std::string& relu_precision = "") {
  return testing::random_data_and_labels({4, 3, 8, 8}, "type: 'uniform' min: 0 max: 4.99") +
         "layer { name: 'c1' type: 'Convolution' bottom: 'data' top: 'c1' convolution_param {\n"
         "  num_output: 8 kernel_size: 3 pad: 1 weight_filler { type: 'gaussian' std: 0.3 }\n"
         "  bias_filler { type: 'gaussian' std: 0.1 } } }\n"
         "layer { name: 'r1' type: 'ReLU' bottom: 'c1' top: 'c1' " +
         relu_precision +
         " }\n"
         "layer { name: 'c2' type: 'Convolution' bottom: 'c1' top: 'c2' convolution_param {\n"
         "  num_output: 8 kernel_size: 3 pad: 1 weight_filler { type: 'gaussian' std: 0.3 } } }\n"
         "layer { name: 'ip' type: 'InnerProduct' bottom: 'c2' top: 'ip' inner_product_param {\n"
         "  num_output: 5 weight_filler { type: 'gaussian' std: 0.1 } } }\n"
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' "
         "}\n";
}

// `type` for the whole run (it overrides every layer's own fields), or
// none: the text's fields decide.
std::unique_ptr<Net> make_net(std::optional<NumberType> type,
                              const std::string& text = net_text()) {
  NetParameter param;
  read_proto_from_text_string(text, &param);
  param.mutable_state()->set_phase(TRAIN);
  NetOptions options;
  options.verbose = false;
  options.precision = type;
  return std::make_unique<Net>(param, options);
}

TEST(OperandArrival, BottomsAndGradientsArriveInTheTypeTheirWritersStoredThem) {
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    SCOPED_TRACE(number_type_name(type));
    auto net = make_net(type);
    const Layer& c1 = *net->layer_by_name("c1");
    const Layer& c2 = *net->layer_by_name("c2");
    const Layer& ip = *net->layer_by_name("ip");
    // The data layer's values stay exact; what the layers computed is stored
    // in the type.
    EXPECT_EQ(c1.bottom_arrives_in(0), NumberType::kFloat32);
    EXPECT_EQ(c2.bottom_arrives_in(0), type);
    EXPECT_EQ(ip.bottom_arrives_in(0), type);
    // Gradients: rounded by their readers' backward passes; the loss's own
    // holds the loss weight.
    EXPECT_EQ(c1.top_gradient_arrives_in(0), type);
    EXPECT_EQ(c2.top_gradient_arrives_in(0), type);
    EXPECT_EQ(ip.top_gradient_arrives_in(0), type);
    EXPECT_EQ(net->layer_by_name("loss")->top_gradient_arrives_in(0), NumberType::kFloat32);
  }
}

TEST(OperandArrival, ALayerThatStoresExactValuesInPlaceMakesThemArriveExact) {
  auto net =
      make_net(std::nullopt, "default_forward_type: FLOAT16 default_backward_type: FLOAT16\n" +
                                 net_text("forward_type: FLOAT backward_type: FLOAT"));
  // The fp32 ReLU rewrites c1 in place: c2 finds fp32 values there, and c1
  // gets an fp32 gradient back from it.
  EXPECT_EQ(net->layer_by_name("c2")->bottom_arrives_in(0), NumberType::kFloat32);
  EXPECT_EQ(net->layer_by_name("c1")->top_gradient_arrives_in(0), NumberType::kFloat32);
  EXPECT_EQ(net->layer_by_name("ip")->bottom_arrives_in(0), NumberType::kFloat16);
}

// The loss and every parameter gradient after one forward and backward.
std::vector<std::vector<float>> results_of(Net& net) {
  net.forward();
  net.backward();
  std::vector<std::vector<float>> results;
  const Blob& loss = *net.blob_by_name("loss");
  results.emplace_back(loss.cpu_data(), loss.cpu_data() + 1);
  for (const Blob* param : net.learnable_params()) {
    results.emplace_back(param->cpu_diff(), param->cpu_diff() + param->count());
  }
  return results;
}

// Every layer told that nothing arrives in its type: it copies and rounds
// every operand, as it did before the arrival types.
void claim_every_arrival_exact(Net& net) {
  for (const auto& layer : net.layers()) {
    const std::size_t bottoms = layer->layer_param().bottom_size();
    const std::size_t tops = layer->layer_param().top_size();
    layer->set_arrival_types(std::vector<NumberType>(bottoms, NumberType::kFloat32),
                             std::vector<NumberType>(tops, NumberType::kFloat32));
  }
}

TEST(OperandArrival, SkippingTheCopiesOfStoredValuesChangesNoBit) {
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    SCOPED_TRACE(number_type_name(type));
    auto skipping = make_net(type);
    auto copying = make_net(type);
    claim_every_arrival_exact(*copying);
    EXPECT_EQ(results_of(*skipping), results_of(*copying));
  }
}

// The comparison above sees a skipped rounding: c1's exact input claimed to
// be in fp16 (which the CPU multiplies through rounded copies) gives other
// weight gradients.
TEST(OperandArrival, AWrongClaimIsSeenInTheGradients) {
  auto wrong = make_net(NumberType::kFloat16);
  auto copying = make_net(NumberType::kFloat16);
  claim_every_arrival_exact(*copying);
  wrong->layer_by_name("c1")->set_arrival_types({NumberType::kFloat16}, {NumberType::kFloat16});
  const auto wrong_results = results_of(*wrong);
  const auto copying_results = results_of(*copying);
  // After the loss: c1's weight gradient.
  EXPECT_NE(wrong_results[1], copying_results[1]);
}

}  // namespace
}  // namespace xtrain

// Mixed precision in a Net (xtrain/precision.hpp): which types each layer
// gets from NVIDIA Caffe's fields and the run's override, which values are
// stored rounded and which stay exact, that a net without the fields
// computes bit for bit as before, and the net's side of loss scaling.
#include "xtrain/precision.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/number_rounding.hpp"
#include "error_message.hpp"
#include "test_net_text.hpp"
#include "xtrain/error.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;

NetParameter net_from(const std::string& text) {
  NetParameter param;
  read_proto_from_text_string(text, &param);
  param.mutable_state()->set_phase(TRAIN);
  return param;
}

LayerParameter layer_from(const std::string& text) {
  LayerParameter param;
  read_proto_from_text_string(text, &param);
  return param;
}

TEST(ResolveLayerPrecision, TheLayersFieldThenTheNetsDefaultThenFloat) {
  const NetParameter net = net_from(
      "default_forward_type: FLOAT16 default_backward_type: BFLOAT16 default_forward_math: FLOAT");
  const LayerPrecision own = resolve_layer_precision(
      net, layer_from("name: 'c' type: 'ReLU' forward_type: BFLOAT16 backward_math: FLOAT16"),
      std::nullopt);
  EXPECT_EQ(own.forward_type, NumberType::kBfloat16);   // the layer's own
  EXPECT_EQ(own.backward_type, NumberType::kBfloat16);  // the net's default
  EXPECT_EQ(own.forward_math, NumberType::kFloat32);    // the net's default FLOAT
  EXPECT_EQ(own.backward_math, NumberType::kFloat16);   // the layer's own
  const LayerPrecision plain =
      resolve_layer_precision(NetParameter(), layer_from("name: 'r' type: 'ReLU'"), std::nullopt);
  EXPECT_TRUE(plain.is_float32());
  EXPECT_EQ(plain.to_string(), "fp32");
  EXPECT_EQ(own.to_string(), "forward bf16, backward bf16, math fp32/fp16");
}

TEST(ResolveLayerPrecision, TheRunsOverrideReplacesEveryField) {
  const NetParameter net = net_from("default_forward_type: FLOAT16");
  const LayerParameter layer = layer_from("name: 'c' type: 'ReLU' backward_type: FLOAT16");
  EXPECT_EQ(resolve_layer_precision(net, layer, NumberType::kBfloat16),
            LayerPrecision::uniform(NumberType::kBfloat16));
  EXPECT_TRUE(resolve_layer_precision(net, layer, NumberType::kFloat32).is_float32());
}

TEST(ResolveLayerPrecision, ATypeNoLayerComputesInIsRefusedNamingTheLayerAndField) {
  const std::string message = error_of([] {
    resolve_layer_precision(NetParameter(),
                            layer_from("name: 'fc6' type: 'InnerProduct' "
                                       "backward_type: DOUBLE"),
                            std::nullopt);
  });
  EXPECT_NE(message.find("layer 'fc6' (InnerProduct): backward_type is DOUBLE"), std::string::npos)
      << message;
  EXPECT_NE(message.find("use FLOAT, FLOAT16 or BFLOAT16"), std::string::npos) << message;
  const std::string net_message = error_of([] {
    resolve_layer_precision(net_from("default_forward_math: INT"),
                            layer_from("name: 'r' type: 'ReLU'"), std::nullopt);
  });
  EXPECT_NE(net_message.find("default_forward_math is INT"), std::string::npos) << net_message;
}

TEST(ParseNumberType, TakesTheUsualSpellingsAndRefusesOthers) {
  EXPECT_EQ(parse_number_type("bf16", "--precision"), NumberType::kBfloat16);
  EXPECT_EQ(parse_number_type("BFloat16", "--precision"), NumberType::kBfloat16);
  EXPECT_EQ(parse_number_type("fp16", "--precision"), NumberType::kFloat16);
  EXPECT_EQ(parse_number_type("float32", "--precision"), NumberType::kFloat32);
  const std::string message = error_of([] { parse_number_type("int8", "--precision"); });
  EXPECT_NE(message.find("--precision 'int8' is not a precision"), std::string::npos) << message;
}

// Two fully connected layers on DummyData with 1000 classes, a loss and an
// accuracy (the labels feed both, through a Split); `header` adds net fields.
std::string classifier_net(const std::string& header) {
  return header + "\n" +
         testing::random_data_and_labels({8, 3, 4, 4}, "type: 'uniform' min: 0 max: 999.99") +
         "layer { name: 'ip1' type: 'InnerProduct' bottom: 'data' top: 'ip1'\n"
         "  inner_product_param { num_output: 16 weight_filler { type: 'gaussian' std: 0.3 }\n"
         "    bias_filler { type: 'gaussian' std: 0.1 } } }\n"
         "layer { name: 'relu1' type: 'ReLU' bottom: 'ip1' top: 'ip1' }\n"
         "layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'\n"
         "  inner_product_param { num_output: 1000 weight_filler { type: 'gaussian' std: 0.3 } } "
         "}\n"
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' "
         "}\n"
         "layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip2' bottom: 'label'\n"
         "  top: 'accuracy' }\n";
}

std::unique_ptr<Net> make_net(const std::string& header,
                              std::optional<NumberType> precision = std::nullopt) {
  NetOptions options;
  options.verbose = false;
  options.precision = precision;
  return std::make_unique<Net>(net_from(classifier_net(header)), options);
}

bool all_stored_in(NumberType type, const float* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const float rounded = type == NumberType::kBfloat16 ? ops::RoundToBfloat16{}(values[i])
                                                        : ops::RoundToFloat16{}(values[i]);
    if (std::memcmp(&rounded, &values[i], sizeof(float)) != 0) return false;
  }
  return true;
}

std::vector<float> values_of(const Blob& blob, bool diff = false) {
  const float* values = diff ? blob.cpu_diff() : blob.cpu_data();
  return std::vector<float>(values, values + blob.count());
}

TEST(MixedPrecisionNet, StoresActivationsAndGradientsRoundedAndKeepsLabelsAndOutputsExact) {
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    SCOPED_TRACE(number_type_name(type));
    auto net = make_net("", type);
    auto reference = make_net("");
    EXPECT_TRUE(net->mixed_precision());
    net->forward();
    net->backward();
    reference->forward();
    // Activations and the gradients the layers wrote are 16-bit values.
    const Blob& hidden = *net->blob_by_name("ip1");
    EXPECT_TRUE(all_stored_in(type, hidden.cpu_data(), hidden.count()));
    EXPECT_TRUE(all_stored_in(type, hidden.cpu_diff(), hidden.count()));
    const Blob& scores = *net->blob_by_name("ip2");
    EXPECT_TRUE(all_stored_in(type, scores.cpu_diff(), scores.count()));
    for (const Blob* param : net->learnable_params()) {
      EXPECT_TRUE(all_stored_in(type, param->cpu_diff(), param->count()));
    }
    // Labels up to 999 are not bf16 values (8 significant bits): they stay
    // as the data layer made them, through the Split to the loss and the
    // accuracy, and so do the data and the outputs.
    EXPECT_EQ(values_of(*net->blob_by_name("label")), values_of(*reference->blob_by_name("label")));
    EXPECT_FALSE(all_stored_in(NumberType::kBfloat16, net->blob_by_name("label")->cpu_data(), 8));
    EXPECT_EQ(values_of(*net->blob_by_name("data")), values_of(*reference->blob_by_name("data")));
    for (const char* layer : {"data", "loss", "accuracy"}) {
      for (int t = 0; t < net->layer_by_name(layer)->layer_param().top_size(); ++t) {
        EXPECT_EQ(net->layer_by_name(layer)->top_storage(t), NumberType::kFloat32) << layer;
      }
    }
    EXPECT_EQ(net->layer_by_name("ip1")->top_storage(0), type);
    // Close to the fp32 net, not equal.
    const float loss = net->blob_by_name("loss")->cpu_data()[0];
    const float reference_loss = reference->blob_by_name("loss")->cpu_data()[0];
    EXPECT_NE(loss, reference_loss);
    EXPECT_NEAR(loss, reference_loss, 0.05 * std::fabs(reference_loss));
  }
}

// Every value a 16-bit net stores is a value of the type, whichever layer
// wrote it and whether or not the layer had to round (a Split, Concat, max
// pooling or ReLU of 16-bit values is 16-bit already, and skips rounding).
TEST(MixedPrecisionNet, EveryStoredValueIsAValueOfTheType) {
  const std::string text =
      testing::random_data_and_labels({4, 3, 8, 8}, "type: 'uniform' min: 0 max: 4.99") +
      "layer { name: 'c1' type: 'Convolution' bottom: 'data' top: 'c1' convolution_param {\n"
      "  num_output: 8 kernel_size: 3 pad: 1 weight_filler { type: 'gaussian' std: 0.3 } } }\n"
      "layer { name: 'r1' type: 'ReLU' bottom: 'c1' top: 'c1' }\n"
      "layer { name: 'p1' type: 'Pooling' bottom: 'c1' top: 'p1' pooling_param { pool: MAX\n"
      "  kernel_size: 2 stride: 2 } }\n"
      "layer { name: 'c2' type: 'Convolution' bottom: 'p1' top: 'c2' convolution_param {\n"
      "  num_output: 8 kernel_size: 3 pad: 1 weight_filler { type: 'gaussian' std: 0.3 } } }\n"
      "layer { name: 'bn' type: 'BatchNorm' bottom: 'c2' top: 'c2' }\n"
      "layer { name: 'sum' type: 'Eltwise' bottom: 'c2' bottom: 'p1' top: 'sum' }\n"
      "layer { name: 'cat' type: 'Concat' bottom: 'sum' bottom: 'p1' top: 'cat' }\n"
      "layer { name: 'drop' type: 'Dropout' bottom: 'cat' top: 'cat' }\n"
      "layer { name: 'ip' type: 'InnerProduct' bottom: 'cat' top: 'ip' inner_product_param {\n"
      "  num_output: 5 weight_filler { type: 'gaussian' std: 0.1 } } }\n"
      "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' }\n";
  for (NumberType type : {NumberType::kBfloat16, NumberType::kFloat16}) {
    SCOPED_TRACE(number_type_name(type));
    NetOptions options;
    options.verbose = false;
    options.precision = type;
    Net net(net_from(text), options);
    net.forward();
    net.backward();
    for (std::size_t i = 0; i < net.layers().size(); ++i) {
      for (std::size_t t = 0; t < net.top_vecs()[i].size(); ++t) {
        const Blob& top = *net.top_vecs()[i][t];
        if (net.layers()[i]->top_storage(static_cast<int>(t)) != type) continue;
        EXPECT_TRUE(all_stored_in(type, top.cpu_data(), top.count()))
            << net.layer_names()[i] << " top " << t;
        EXPECT_TRUE(all_stored_in(type, top.cpu_diff(), top.count()))
            << net.layer_names()[i] << " top " << t << " gradient";
      }
    }
  }
}

TEST(MixedPrecisionNet, ASplitComputesInItsProducersTypes) {
  auto net = make_net("default_forward_type: FLOAT16 default_backward_type: FLOAT16");
  // The label's Split copies the data layer's exact labels; the scores'
  // Split stores as the scores are stored.
  EXPECT_EQ(net->layer_by_name("label_data_1_split")->top_storage(0), NumberType::kFloat32);
  EXPECT_EQ(net->layer_by_name("ip2_ip2_0_split")->top_storage(0), NumberType::kFloat16);
  NetParameter param = net_from(
      "default_forward_type: FLOAT16\n"
      "layer { name: 'in' type: 'DummyData' top: 'x' dummy_data_param { shape { dim: 2 dim: 3 } "
      "data_filler { type: 'gaussian' } } }\n"
      "layer { name: 'fc' type: 'InnerProduct' bottom: 'x' top: 'y' forward_type: BFLOAT16 "
      "inner_product_param { num_output: 4 weight_filler { type: 'gaussian' } } }\n"
      "layer { name: 'a' type: 'ReLU' bottom: 'y' top: 'a' }\n"
      "layer { name: 'b' type: 'Sigmoid' bottom: 'y' top: 'b' }\n");
  NetOptions options;
  options.verbose = false;
  Net split_net(param, options);
  bool found = false;
  for (const auto& layer : split_net.layers()) {
    if (std::string(layer->type()) != "Split") continue;
    found = true;
    EXPECT_EQ(layer->precision().forward_type, NumberType::kBfloat16);
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(split_net.layer_by_name("a")->precision().forward_type, NumberType::kFloat16);
  EXPECT_EQ(split_net.precision_summary(),
            "forward fp16, backward fp32, math fp32 (2 of 5 layers forward bf16, backward fp32, "
            "math fp32)");
}

TEST(MixedPrecisionNet, WithoutTheFieldsOrInFp32ItComputesBitForBitAsBefore) {
  auto plain = make_net("");
  auto explicit_float = make_net(
      "default_forward_type: FLOAT default_backward_type: FLOAT default_forward_math: FLOAT");
  auto overridden = make_net("default_forward_type: BFLOAT16", NumberType::kFloat32);
  EXPECT_FALSE(plain->mixed_precision());
  EXPECT_FALSE(overridden->mixed_precision());
  for (Net* net : {plain.get(), explicit_float.get(), overridden.get()}) {
    net->forward();
    net->backward();
  }
  for (Net* net : {explicit_float.get(), overridden.get()}) {
    EXPECT_EQ(values_of(*net->blob_by_name("ip1")), values_of(*plain->blob_by_name("ip1")));
    EXPECT_EQ(values_of(*net->blob_by_name("loss")), values_of(*plain->blob_by_name("loss")));
    for (std::size_t i = 0; i < plain->learnable_params().size(); ++i) {
      EXPECT_EQ(values_of(*net->learnable_params()[i], true),
                values_of(*plain->learnable_params()[i], true));
    }
  }
}

TEST(NetLossScale, BackwardComputesTheScaledLossesGradientsAndForwardsLossStaysUnscaled) {
  auto net = make_net("");
  auto scaled = make_net("");
  net->forward();
  net->backward();
  scaled->set_loss_scale(1024.0f);  // a power of two: scaling is exact
  const float loss = scaled->forward();
  scaled->backward();
  EXPECT_EQ(loss, net->blob_by_name("loss")->cpu_data()[0]);
  for (std::size_t i = 0; i < net->learnable_params().size(); ++i) {
    std::vector<float> expected = values_of(*net->learnable_params()[i], true);
    for (float& value : expected) value *= 1024.0f;
    EXPECT_EQ(values_of(*scaled->learnable_params()[i], true), expected);
  }
  // The loss weight is back in the loss top's diff, where the next pass
  // starts from.
  EXPECT_EQ(scaled->blob_by_name("loss")->cpu_diff()[0], 1.0f);
}

TEST(NetLossScale, AScaleThatCannotScaleIsRefused) {
  auto net = make_net("");
  for (float scale : {0.0f, -2.0f, std::numeric_limits<float>::infinity()}) {
    const std::string message = error_of([&] { net->set_loss_scale(scale); });
    EXPECT_NE(message.find("give a finite number above 0"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace xtrain

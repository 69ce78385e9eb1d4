// Old net and solver files: V1 and V0 layers, legacy data-layer fields,
// input fields, BatchNorm param specs, the solver_type enum and V1
// .caffemodel weights are upgraded on load to what a hand-written current
// file says, and build the same net.
#include "core/net_upgrade.hpp"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>

#include "error_message.hpp"
#include "lmdb_fixture.hpp"
#include "net_upgrade_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

using namespace net_upgrade_fixture;

TEST(NetUpgrade, V1LeNetBecomesTheHandWrittenV2) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(kV1LeNet);
  ASSERT_TRUE(net_needs_upgrade(net));
  std::vector<std::string> steps;
  EXPECT_TRUE(upgrade_net_as_needed("lenet_v1.prototxt", &net, &steps));
  EXPECT_TRUE(same_proto(net, parse<NetParameter>(kV2LeNet)));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_CONTAINS(steps[0], "transform_param");
  EXPECT_CONTAINS(steps[1], "V1 layer format");
  EXPECT_FALSE(net_needs_upgrade(net));
  EXPECT_FALSE(upgrade_net_as_needed("lenet_v2.prototxt", &net));
}

TEST(NetUpgrade, V1AndV2LeNetFilesBuildTheSameNet) {
  QuietLog quiet;
  TempDir dir("net_upgrade");
  std::vector<FixtureImage> images(8);
  for (std::size_t i = 0; i < images.size(); ++i) {
    images[i].label = static_cast<int>(i % 10);
    images[i].pixels.resize(28 * 28);
    for (std::size_t p = 0; p < images[i].pixels.size(); ++p) {
      images[i].pixels[p] = static_cast<unsigned char>((p * 7 + i * 31) % 256);
    }
  }
  // One copy of the database per net: LMDB forbids opening one twice in a
  // process.
  auto with_db = [&](const char* text, const std::string& db) {
    write_datum_lmdb(db, 1, 28, 28, images);
    return replaced(replaced(text, "TRAIN_DB", db), "TEST_DB", db);
  };
  const std::string v1 = dir.write("lenet_v1.prototxt", with_db(kV1LeNet, dir.file("db_v1")));
  const std::string v2 = dir.write("lenet_v2.prototxt", with_db(kV2LeNet, dir.file("db_v2")));

  for (Phase phase : {TRAIN, TEST}) {
    SCOPED_TRACE(phase == TRAIN ? "TRAIN" : "TEST");
    Net old_net(v1, phase, 0, {}, quiet_net());
    Net new_net(v2, phase, 0, {}, quiet_net());
    expect_same_net(old_net, new_net);
    EXPECT_EQ(old_net.blob_by_name("data")->shape(),
              (std::vector<int>{phase == TRAIN ? 4 : 2, 1, 28, 28}));
    EXPECT_EQ(old_net.learnable_params().size(), 8u);
    // Same weights, same data, same scaling: the same loss.
    const float old_loss = old_net.forward();
    const float new_loss = new_net.forward();
    EXPECT_TRUE(std::isfinite(old_loss));
    EXPECT_EQ(old_loss, new_loss);
    // The upgraded scale reached the data layer: pixels are in [0, 1).
    const Blob& data = *old_net.blob_by_name("data");
    float largest = 0;
    for (std::size_t i = 0; i < data.count(); ++i) largest = std::max(largest, data.cpu_data()[i]);
    EXPECT_GT(largest, 0.5f);
    EXPECT_LT(largest, 1.0f);
  }
  // conv2's bias is not decayed; conv1 kept the default decay.
  Net net(v1, TRAIN, 0, {}, quiet_net());
  EXPECT_EQ(net.params_lr(), (std::vector<float>{1, 2, 1, 2, 1, 2, 1, 2}));
  EXPECT_EQ(net.params_weight_decay(), (std::vector<float>{1, 1, 1, 0, 1, 0, 1, 1}));
}

TEST(NetUpgrade, V1InputFieldsBecomeAnInputLayerAndBuildTheSameNet) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(kV1WithInputs);
  std::vector<std::string> steps;
  upgrade_net_as_needed("tiny.prototxt", &net, &steps);
  EXPECT_TRUE(same_proto(net, parse<NetParameter>(kV2WithInputLayer)));
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_CONTAINS(steps[1], "input");

  TempDir dir("net_upgrade");
  Net old_net(dir.write("v1.prototxt", kV1WithInputs), TRAIN, 0, {}, quiet_net());
  Net new_net(dir.write("v2.prototxt", kV2WithInputLayer), TRAIN, 0, {}, quiet_net());
  expect_same_net(old_net, new_net);
  fill_tiny_inputs(old_net);
  fill_tiny_inputs(new_net);
  EXPECT_EQ(old_net.forward(), new_net.forward());
}

// V0: flat layer messages, lower-case types, and padding layers in front of
// the conv and pool layers.
const char* kV0Net = R"(
name: "v0"
input: "data"
input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8
layers { layer { name: "pad1" type: "padding" pad: 2 } bottom: "data" top: "pad1" }
layers {
  layer { name: "conv1" type: "conv" num_output: 4 kernelsize: 3 stride: 1
          weight_filler { type: "gaussian" std: 0.01 } bias_filler { type: "constant" value: 0.5 }
          blobs_lr: 1 blobs_lr: 2 weight_decay: 1 weight_decay: 0 }
  bottom: "pad1" top: "conv1"
}
layers { layer { name: "relu1" type: "relu" } bottom: "conv1" top: "conv1" }
layers { layer { name: "pad2" type: "padding" pad: 1 } bottom: "conv1" top: "pad2" }
layers { layer { name: "pool1" type: "pool" pool: AVE kernelsize: 3 stride: 2 }
         bottom: "pad2" top: "pool1" }
layers { layer { name: "norm1" type: "lrn" local_size: 3 alpha: 0.0001 beta: 0.75 }
         bottom: "pool1" top: "norm1" }
layers { layer { name: "fc" type: "innerproduct" num_output: 5 biasterm: false
                 weight_filler { type: "xavier" } }
         bottom: "norm1" top: "fc" }
layers { layer { name: "drop" type: "dropout" dropout_ratio: 0.3 } bottom: "fc" top: "fc" }
)";

const char* kV0NetUpgraded = R"(
name: "v0"
layer { name: "input" type: "Input" top: "data"
        input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
layer {
  name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
  param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
  convolution_param { num_output: 4 pad: 2 kernel_size: 3 stride: 1
                      weight_filler { type: "gaussian" std: 0.01 }
                      bias_filler { type: "constant" value: 0.5 } }
}
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "pool1" type: "Pooling" bottom: "conv1" top: "pool1"
        pooling_param { pool: AVE pad: 1 kernel_size: 3 stride: 2 } }
layer { name: "norm1" type: "LRN" bottom: "pool1" top: "norm1"
        lrn_param { local_size: 3 alpha: 0.0001 beta: 0.75 } }
layer { name: "fc" type: "InnerProduct" bottom: "norm1" top: "fc"
        inner_product_param { num_output: 5 bias_term: false weight_filler { type: "xavier" } } }
layer { name: "drop" type: "Dropout" bottom: "fc" top: "fc" dropout_param { dropout_ratio: 0.3 } }
)";

TEST(NetUpgrade, V0PaddingLayersFoldIntoConvAndPoolPads) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(kV0Net);
  ASSERT_TRUE(net_needs_v0_to_v1_upgrade(net));
  std::vector<std::string> steps;
  upgrade_net_as_needed("v0.prototxt", &net, &steps);
  EXPECT_TRUE(same_proto(net, parse<NetParameter>(kV0NetUpgraded)));
  ASSERT_EQ(steps.size(), 3u);  // V0 -> V1 -> V2, then the input fields
  EXPECT_CONTAINS(steps[0], "V0");

  // The pads act as the padding layers did: 8 + 2*2 - 3 + 1 = 10, then
  // ceil((10 + 2*1 - 3) / 2) + 1 = 6.
  Net built(net, quiet_net());
  EXPECT_EQ(built.blob_by_name("conv1")->shape(), (std::vector<int>{1, 4, 10, 10}));
  EXPECT_EQ(built.blob_by_name("pool1")->shape(), (std::vector<int>{1, 4, 6, 6}));
  EXPECT_EQ(built.blob_by_name("fc")->shape(), (std::vector<int>{1, 5}));
}

TEST(NetUpgrade, V0PaddingBeforeAnotherKindOfLayerIsAnError) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    input: "data"
    layers { layer { name: "pad1" type: "padding" pad: 1 } bottom: "data" top: "pad1" }
    layers { layer { name: "relu1" type: "relu" } bottom: "pad1" top: "relu1" })");
  testing::expect_error([&] { upgrade_net_as_needed("bad_v0.prototxt", &net); },
                        {"'bad_v0.prototxt'", "'pad1'", "'relu1'"});
}

TEST(NetUpgrade, V0UnknownTypeNamesTheLayer) {
  QuietLog quiet;
  NetParameter net =
      parse<NetParameter>(R"(layers { layer { name: "odd" type: "warp_field" } top: "x" })");
  testing::expect_error([&] { upgrade_net_as_needed("odd_v0.prototxt", &net); },
                        {"'odd_v0.prototxt'", "'odd'", "'warp_field'"});
}

TEST(NetUpgrade, V0SettingsWithoutAPlaceAreDroppedNotFatal) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    input: "x"
    input_dim: 1 input_dim: 1 input_dim: 1 input_dim: 2
    layers { layer { name: "relu" type: "relu" num_output: 3 } bottom: "x" top: "y" })");
  std::vector<std::string> steps;
  upgrade_net_as_needed("v0.prototxt", &net, &steps);
  ASSERT_EQ(steps.size(), 4u);  // V0, the dropped setting, V1, inputs
  EXPECT_EQ(steps[1],
            "sets num_output on layer 'relu' (V0 type 'relu', which has no such setting): dropped");
  ASSERT_EQ(net.layer_size(), 2);
  EXPECT_TRUE(same_proto(
      net.layer(1), parse<LayerParameter>(R"(name: "relu" type: "ReLU" bottom: "x" top: "y")")));
}

TEST(NetUpgrade, V1LayerTypeWithoutEquivalentNamesTheLayer) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    layers { name: "data" type: DATA top: "data" }
    layers { name: "mystery" type: NONE bottom: "data" top: "out" })");
  testing::expect_error([&] { upgrade_net_as_needed("old.prototxt", &net); },
                        {"'old.prototxt'", "'mystery'", "NONE"});
}

TEST(NetUpgrade, UnknownV1TypeInTextIsAParseErrorWithTheLine) {
  TempDir dir("net_upgrade");
  const std::string path =
      dir.write("old.prototxt", "name: \"n\"\nlayers {\n  name: \"x\"\n  type: CONVOLUTOIN\n}\n");
  // (protobuf reports an unknown enum value at the token after it)
  testing::expect_error([&] { read_net_params_from_text_file(path); }, {path + ":", "CONVOLUTOIN"});
}

TEST(NetUpgrade, LayerAndLayersTogetherIsAnError) {
  NetParameter net = parse<NetParameter>(R"(
    layer { name: "new" type: "ReLU" bottom: "x" top: "x" }
    layers { name: "old" type: RELU bottom: "x" top: "x" })");
  testing::expect_error([&] { upgrade_net_as_needed("mixed.prototxt", &net); },
                        {"'mixed.prototxt'", "`layer`", "`layers`"});
}

TEST(NetUpgrade, EveryV1TypeMapsToCaffesName) {
  const auto* values = V1LayerParameter::LayerType_descriptor();
  for (int i = 0; i < values->value_count(); ++i) {
    const auto type = static_cast<V1LayerParameter::LayerType>(values->value(i)->number());
    if (type == V1LayerParameter::NONE) {
      EXPECT_THROW(v1_layer_type_name(type), Error);
    } else {
      EXPECT_FALSE(v1_layer_type_name(type).empty()) << values->value(i)->name();
    }
  }
  EXPECT_EQ(v1_layer_type_name(V1LayerParameter::SOFTMAX_LOSS), "SoftmaxWithLoss");
  EXPECT_EQ(v1_layer_type_name(V1LayerParameter::HDF5_DATA), "HDF5Data");
  EXPECT_EQ(v1_layer_type_name(V1LayerParameter::IM2COL), "Im2col");
}

TEST(NetUpgrade, EveryV1TypedParameterIsCopied) {
  // Set every *_param of a V1 layer; each must arrive in the V2 layer.
  NetParameter net;
  V1LayerParameter* v1 = net.add_layers();
  v1->set_name("all");
  v1->set_type(V1LayerParameter::RELU);
  const auto* descriptor = V1LayerParameter::descriptor();
  int typed = 0;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    const std::string& name = field->name();
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "_param") != 0) continue;
    // An unknown field makes each sub-message non-empty and distinct.
    google::protobuf::Message* sub = v1->GetReflection()->MutableMessage(v1, field);
    sub->GetReflection()->MutableUnknownFields(sub)->AddVarint(999, i);
    ++typed;
  }
  EXPECT_EQ(typed, 30);  // 28 layer kinds, transform_param and loss_param
  upgrade_v1_net("all.prototxt", &net);
  const LayerParameter& layer = net.layer(0);
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    const std::string& name = field->name();
    if (name.size() < 6 || name.compare(name.size() - 6, 6, "_param") != 0) continue;
    const auto* target = LayerParameter::descriptor()->FindFieldByName(name);
    ASSERT_NE(target, nullptr) << name;
    ASSERT_TRUE(layer.GetReflection()->HasField(layer, target)) << name;
    const auto& copied = layer.GetReflection()->GetMessage(layer, target);
    const auto& unknown = copied.GetReflection()->GetUnknownFields(copied);
    ASSERT_EQ(unknown.field_count(), 1) << name;
    EXPECT_EQ(unknown.field(0).varint(), static_cast<std::uint64_t>(i)) << name;
  }
}

TEST(NetUpgrade, OldImageAndWindowDataFieldsMoveToTransformParam) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    layers { name: "images" type: IMAGE_DATA top: "a" top: "b"
             image_data_param { source: "list.txt" mean_file: "mean.binaryproto" mirror: true
                                crop_size: 227 batch_size: 5 } }
    layers { name: "windows" type: WINDOW_DATA top: "c" top: "d"
             window_data_param { source: "windows.txt" scale: 0.5 } }
    layers { name: "plain" type: DATA top: "e" top: "f" data_param { source: "db" } })");
  ASSERT_TRUE(net_needs_data_upgrade(net));
  upgrade_net_as_needed("old.prototxt", &net);
  EXPECT_TRUE(same_proto(net, parse<NetParameter>(R"(
    layer { name: "images" type: "ImageData" top: "a" top: "b"
            transform_param { mirror: true crop_size: 227 mean_file: "mean.binaryproto" }
            image_data_param { source: "list.txt" batch_size: 5 } }
    layer { name: "windows" type: "WindowData" top: "c" top: "d"
            transform_param { scale: 0.5 }
            window_data_param { source: "windows.txt" } }
    layer { name: "plain" type: "Data" top: "e" top: "f"
            transform_param { } data_param { source: "db" } })")));
}

TEST(NetUpgrade, BatchNormWithThreeParamSpecsStopsLearningItsStatistics) {
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x"
            param { lr_mult: 1 decay_mult: 1 name: "bn_mean" } param { lr_mult: 1 } param { } }
    layer { name: "bn2" type: "BatchNorm" bottom: "x" top: "x" })");
  std::vector<std::string> steps;
  EXPECT_TRUE(upgrade_net_as_needed("bn.prototxt", &net, &steps));
  EXPECT_EQ(steps.size(), 1u);
  EXPECT_TRUE(same_proto(net, parse<NetParameter>(R"(
    layer { name: "bn" type: "BatchNorm" bottom: "x" top: "x"
            param { name: "bn_mean" lr_mult: 0 decay_mult: 0 }
            param { lr_mult: 0 decay_mult: 0 } param { lr_mult: 0 decay_mult: 0 } }
    layer { name: "bn2" type: "BatchNorm" bottom: "x" top: "x" })")));
}

TEST(NetUpgrade, InputNamesWithoutShapesAreDropped) {
  // Old .caffemodel files list the input names only.
  QuietLog quiet;
  NetParameter net = parse<NetParameter>(R"(
    input: "data"
    layers { name: "ip" type: INNER_PRODUCT bottom: "data" top: "ip" })");
  upgrade_net_as_needed("old.caffemodel", &net);
  EXPECT_EQ(net.input_size(), 0);
  ASSERT_EQ(net.layer_size(), 1);
  EXPECT_EQ(net.layer(0).name(), "ip");
}

}  // namespace
}  // namespace xtrain::testing

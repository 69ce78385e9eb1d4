// xtrain/onnx.hpp at the level of the ONNX messages: what the exporter
// writes for Caffe's AVE pooling and BatchNorm + Scale, round trips through
// the importer, and the one-line errors naming a layer or a node. The
// comparisons with ONNX Runtime and PyTorch are tests/onnx/ (pytest).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "interchange/onnx.pb.h"
#include "interchange/onnx_tensor.hpp"
#include "xtrain/net.hpp"
#include "xtrain/onnx.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

class OnnxInterchange : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("xtrain_onnx_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static onnx::ModelProto read_model(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    onnx::ModelProto model;
    EXPECT_TRUE(model.ParseFromIstream(&in));
    return model;
  }
  static const onnx::NodeProto* find_node(const onnx::ModelProto& model, const std::string& op) {
    for (const onnx::NodeProto& node : model.graph().node()) {
      if (node.op_type() == op) return &node;
    }
    return nullptr;
  }
  static std::vector<std::int64_t> ints(const onnx::NodeProto& node, const std::string& name) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.name() == name) return {attribute.ints().begin(), attribute.ints().end()};
    }
    return {};
  }
  static std::vector<float> initializer(const onnx::ModelProto& model, const std::string& name) {
    for (const onnx::TensorProto& tensor : model.graph().initializer()) {
      if (tensor.name() == name) return interchange::float_values(tensor);
    }
    return {};
  }

  std::filesystem::path dir_;
};

constexpr const char* kPoolingNet = R"(
name: "pool"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 6 dim: 6 } } }
layer { name: "ave" type: "Pooling" bottom: "data" top: "ave"
        pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
layer { name: "max" type: "Pooling" bottom: "data" top: "max"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 pad: 1 } }
)";

TEST_F(OnnxInterchange, PoolingGetsCaffesEndPadAndAverageItsClippedDivisors) {
  export_onnx(read_net_params_from_text(kPoolingNet, "pool"), "", path("pool.onnx"));
  const onnx::ModelProto model = read_model(path("pool.onnx"));
  const onnx::NodeProto* average = find_node(model, "AveragePool");
  const onnx::NodeProto* max = find_node(model, "MaxPool");
  const onnx::NodeProto* factors = find_node(model, "Mul");
  ASSERT_TRUE(average != nullptr && max != nullptr && factors != nullptr);
  // 6 wide, kernel 3, stride 2, pad 1: Caffe's 4 windows need pads 1 and 2
  // (ONNX rounds down); the last window, [5, 8), Caffe divides by 2 x 3 or
  // 2 x 2 (clipped to 7 = 6 + pad), where the AveragePool divides by 9.
  EXPECT_EQ(ints(*average, "pads"), (std::vector<std::int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(ints(*max, "pads"), (std::vector<std::int64_t>{1, 1, 2, 2}));
  EXPECT_EQ(factors->input(0), average->output(0));
  const std::vector<float> expected = {1, 1, 1, 1.5f, 1,    1,    1,    1.5f,
                                       1, 1, 1, 1.5f, 1.5f, 1.5f, 1.5f, 2.25f};
  EXPECT_EQ(initializer(model, factors->input(1)), expected);
  EXPECT_EQ(model.graph().output_size(), 2);
}

TEST_F(OnnxInterchange, BatchNormFoldsItsScaleFactorAndTheFollowingScale) {
  const NetParameter param = read_net_params_from_text(R"(
    name: "bn"
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 3 dim: 3 } } }
    layer { name: "bn" type: "BatchNorm" bottom: "data" top: "bn" batch_norm_param { eps: 0.001 } }
    layer { name: "scale" type: "Scale" bottom: "bn" top: "bn" scale_param { bias_term: true } }
  )",
                                                       "bn");
  Net net(param);
  const auto set = [](Blob& blob, std::vector<float> values) {
    std::memcpy(blob.mutable_cpu_data(), values.data(), values.size() * sizeof(float));
  };
  const auto& bn = net.layer_by_name("bn")->blobs();
  set(*bn[0], {2, 4});  // sums of the means, to be divided by the factor 2
  set(*bn[1], {6, 8});
  set(*bn[2], {2});
  set(*net.layer_by_name("scale")->blobs()[0], {5, 6});
  set(*net.layer_by_name("scale")->blobs()[1], {7, 8});
  NetParameter weights;
  net.to_proto(&weights);
  write_proto_to_binary_file(weights, path("bn.caffemodel"));

  export_onnx(param, path("bn.caffemodel"), path("bn.onnx"));
  const onnx::ModelProto model = read_model(path("bn.onnx"));
  ASSERT_EQ(model.graph().node_size(), 1);
  const onnx::NodeProto& node = model.graph().node(0);
  EXPECT_EQ(node.op_type(), "BatchNormalization");
  EXPECT_EQ(initializer(model, node.input(1)), (std::vector<float>{5, 6}));
  EXPECT_EQ(initializer(model, node.input(2)), (std::vector<float>{7, 8}));
  EXPECT_EQ(initializer(model, node.input(3)), (std::vector<float>{1, 2}));
  EXPECT_EQ(initializer(model, node.input(4)), (std::vector<float>{3, 4}));
  EXPECT_FLOAT_EQ(node.attribute(0).f(), 0.001f);
  EXPECT_EQ(node.output(0), "bn");  // the net's output keeps its name

  // Back in: BatchNorm (factor 1) and a Scale with bias, in place.
  const ImportedNet imported = import_onnx(path("bn.onnx"));
  ASSERT_EQ(imported.net.layer_size(), 3);
  EXPECT_EQ(imported.net.layer(1).type(), "BatchNorm");
  EXPECT_EQ(imported.net.layer(2).type(), "Scale");
  ASSERT_EQ(imported.weights.layer_size(), 3);  // every layer, as a saved net has them
  EXPECT_EQ(imported.weights.layer(1).blobs(0).data(1), 2.0f);
  EXPECT_EQ(imported.weights.layer(1).blobs(2).data(0), 1.0f);
}

// NVIDIA Caffe's scale_bias: its scale and bias are BatchNormalization's
// scale and B; a Scale after it multiplies into them.
TEST_F(OnnxInterchange, BatchNormScaleBiasBecomesTheNodesScaleAndBias) {
  for (const bool with_scale : {false, true}) {
    SCOPED_TRACE(with_scale ? "with a Scale after it" : "alone");
    const NetParameter param = read_net_params_from_text(std::string(R"(
      name: "bn"
      layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 3 dim: 3 } } }
      layer { name: "bn" type: "BatchNorm" bottom: "data" top: "bn"
              batch_norm_param { eps: 0.001 scale_bias: true } }
    )") + (with_scale ? R"(layer { name: "scale" type: "Scale" bottom: "bn" top: "bn"
                                    scale_param { bias_term: true } })"
                      : ""),
                                                         "bn");
    Net net(param);
    const auto set = [](Blob& blob, std::vector<float> values) {
      std::memcpy(blob.mutable_cpu_data(), values.data(), values.size() * sizeof(float));
    };
    const auto& bn = net.layer_by_name("bn")->blobs();
    ASSERT_EQ(bn.size(), 5u);
    set(*bn[0], {2, 4});
    set(*bn[1], {6, 8});
    set(*bn[2], {2});
    set(*bn[3], {0.5f, 3});
    set(*bn[4], {-1, 2});
    if (with_scale) {
      set(*net.layer_by_name("scale")->blobs()[0], {5, 6});
      set(*net.layer_by_name("scale")->blobs()[1], {7, 8});
    }
    NetParameter weights;
    net.to_proto(&weights);
    write_proto_to_binary_file(weights, path("bn.caffemodel"));

    export_onnx(param, path("bn.caffemodel"), path("bn.onnx"));
    const onnx::ModelProto model = read_model(path("bn.onnx"));
    ASSERT_EQ(model.graph().node_size(), 1);
    const onnx::NodeProto& node = model.graph().node(0);
    EXPECT_EQ(node.op_type(), "BatchNormalization");
    if (with_scale) {
      EXPECT_EQ(initializer(model, node.input(1)), (std::vector<float>{2.5f, 18}));
      EXPECT_EQ(initializer(model, node.input(2)), (std::vector<float>{2, 20}));
    } else {
      EXPECT_EQ(initializer(model, node.input(1)), (std::vector<float>{0.5f, 3}));
      EXPECT_EQ(initializer(model, node.input(2)), (std::vector<float>{-1, 2}));
    }
    EXPECT_EQ(initializer(model, node.input(3)), (std::vector<float>{1, 2}));
    EXPECT_EQ(initializer(model, node.input(4)), (std::vector<float>{3, 4}));
  }
}

TEST_F(OnnxInterchange, PoolingRoundTripsToCaffesPads) {
  export_onnx(read_net_params_from_text(kPoolingNet, "pool"), "", path("pool.onnx"));
  const ImportedNet imported = import_onnx(path("pool.onnx"));
  ASSERT_EQ(imported.net.layer_size(), 3);
  for (int i = 1; i < 3; ++i) {
    const PoolingParameter& pool = imported.net.layer(i).pooling_param();
    EXPECT_EQ(pool.pad(), 1u);
    EXPECT_EQ(pool.kernel_size(), 3u);
    EXPECT_EQ(pool.stride(), 2u);
    // Pads 1 and 2: Caffe 1.0's rounding, not ONNX's floor with the same pads.
    EXPECT_EQ(pool.round_mode(), PoolingParameter::CEIL);
  }
  EXPECT_EQ(imported.net.layer(1).top(0), "ave");  // the divisor factors are folded in
}

// round_mode FLOOR on a 7x6 input: ONNX's own floor rounding with the pad
// at both ends (no divisor factors: a FLOOR window never leaves the
// padding), read back as FLOOR, computing the same numbers.
TEST_F(OnnxInterchange, FloorRoundModeRoundTripsAsOnnxFloorRounding) {
  const NetParameter param = read_net_params_from_text(R"(
    name: "floor"
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 7 dim: 6 } } }
    layer { name: "ave" type: "Pooling" bottom: "data" top: "ave"
            pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR } }
    layer { name: "max" type: "Pooling" bottom: "data" top: "max"
            pooling_param { pool: MAX kernel_size: 2 stride: 2 round_mode: FLOOR } }
  )",
                                                       "floor");
  export_onnx(param, "", path("floor.onnx"));
  const onnx::ModelProto model = read_model(path("floor.onnx"));
  const onnx::NodeProto* average = find_node(model, "AveragePool");
  const onnx::NodeProto* max = find_node(model, "MaxPool");
  ASSERT_TRUE(average != nullptr && max != nullptr);
  EXPECT_EQ(ints(*average, "pads"), (std::vector<std::int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(ints(*max, "pads"), (std::vector<std::int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(find_node(model, "Mul"), nullptr);

  const ImportedNet imported = import_onnx(path("floor.onnx"));
  ASSERT_EQ(imported.net.layer_size(), 3);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(imported.net.layer(i).pooling_param().round_mode(), PoolingParameter::FLOOR);
  }
  Net original(param);
  Net reread(imported.net);
  for (Net* net : {&original, &reread}) {
    float* data = net->input_blobs()[0]->mutable_cpu_data();
    for (std::size_t i = 0; i < net->input_blobs()[0]->count(); ++i)
      data[i] = 0.25f * ((i * 7) % 11);
    net->forward();
  }
  for (const char* blob : {"ave", "max"}) {
    const Blob& want = *original.blob_by_name(blob);
    const Blob& got = *reread.blob_by_name(blob);
    // floor((7 + 2 - 3) / 2) + 1 = 4 by floor((6 + 2 - 3) / 2) + 1 = 3; 3 by 3.
    EXPECT_EQ(want.shape(), std::string(blob) == "ave" ? (std::vector<int>{1, 2, 4, 3})
                                                       : (std::vector<int>{1, 2, 3, 3}));
    ASSERT_EQ(got.shape(), want.shape()) << blob;
    for (std::size_t i = 0; i < want.count(); ++i) {
      EXPECT_FLOAT_EQ(got.cpu_data()[i], want.cpu_data()[i]) << blob << " " << i;
    }
  }
}

// The layers imports of PyTorch's models produce export again, and their
// export imports to the same numbers (GELU back as one GELU layer; ONNX
// Runtime's numbers for them: tests/onnx, the "newer_layers" case).
TEST_F(OnnxInterchange, NewerLayersRoundTripWithTheirNumbers) {
  const NetParameter param = read_net_params_from_text(R"(
    name: "newer"
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 dim: 3 dim: 4 } } }
    layer { name: "clip" type: "Clip" bottom: "data" top: "clip" clip_param { min: -0.5 max: 1 } }
    layer { name: "swish" type: "Swish" bottom: "data" top: "swish" swish_param { beta: 1.5 } }
    layer { name: "gelu" type: "GELU" bottom: "data" top: "gelu" }
    layer { name: "permute" type: "Permute" bottom: "data" top: "permute"
            permute_param { order: 0 order: 2 order: 3 } }
    layer { name: "upsample" type: "Upsample" bottom: "data" top: "upsample"
            upsample_param { scale: 2 } }
  )",
                                                       "newer");
  export_onnx(param, "", path("newer.onnx"));
  const onnx::ModelProto model = read_model(path("newer.onnx"));
  for (const char* op : {"Clip", "Sigmoid", "Erf", "Transpose", "Resize"}) {
    EXPECT_NE(find_node(model, op), nullptr) << op;
  }
  EXPECT_EQ(ints(*find_node(model, "Transpose"), "perm"), (std::vector<std::int64_t>{0, 2, 3, 1}));
  const ImportedNet imported = import_onnx(path("newer.onnx"));
  int gelu_layers = 0;
  for (const LayerParameter& layer : imported.net.layer()) gelu_layers += layer.type() == "GELU";
  EXPECT_EQ(gelu_layers, 1);
  Net original(param);
  Net reread(imported.net);
  for (Net* net : {&original, &reread}) {
    float* data = net->input_blobs()[0]->mutable_cpu_data();
    for (std::size_t i = 0; i < net->input_blobs()[0]->count(); ++i) {
      data[i] = 0.37f * static_cast<float>(i % 9) - 1.2f;
    }
    net->forward();
  }
  for (const char* blob : {"clip", "swish", "gelu", "permute", "upsample"}) {
    const Blob& want = *original.blob_by_name(blob);
    const Blob& got = *reread.blob_by_name(blob);
    ASSERT_EQ(got.shape(), want.shape()) << blob;
    for (std::size_t i = 0; i < want.count(); ++i) {
      EXPECT_NEAR(got.cpu_data()[i], want.cpu_data()[i], 1e-6f) << blob << " " << i;
    }
  }
}

TEST_F(OnnxInterchange, ALayerWithoutAnOnnxFormIsNamedWithItsType) {
  const NetParameter param = read_net_params_from_text(R"(
    name: "train"
    layer { name: "data" type: "Input" top: "data" top: "label"
            input_param { shape { dim: 2 dim: 3 } shape { dim: 2 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "loss" }
  )",
                                                       "train");
  const std::string message = testing::error_of([&] { export_onnx(param, "", path("x.onnx")); });
  EXPECT_NE(message.find("layer 'loss' (SoftmaxWithLoss) has no ONNX equivalent"),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_FALSE(std::filesystem::exists(path("x.onnx")));
}

TEST_F(OnnxInterchange, AnOperatorWithoutALayerIsNamedWithItsNode) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto* graph = model.mutable_graph();
  onnx::ValueInfoProto* input = graph->add_input();
  input->set_name("x");
  input->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  input->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  onnx::NodeProto* node = graph->add_node();
  node->set_name("lookup");
  node->set_op_type("GatherND");
  node->add_input("x");
  node->add_output("y");
  std::ofstream(path("gather.onnx"), std::ios::binary) << model.SerializeAsString();
  const std::string message = testing::error_of([&] { import_onnx(path("gather.onnx")); });
  EXPECT_NE(message.find("node 'lookup' (GatherND) has no xtrain layer"), std::string::npos)
      << message;
}

TEST_F(OnnxInterchange, AMalformedModelIsAnErrorNotACrash) {
  std::ofstream(path("text.onnx")) << "name: 'not a model'\n";
  testing::expect_error([&] { import_onnx(path("text.onnx")); }, {"is not an ONNX model"});
  onnx::ModelProto model;
  model.add_opset_import()->set_version(13);
  onnx::NodeProto* node = model.mutable_graph()->add_node();
  node->set_name("lonely");
  node->set_op_type("Relu");
  node->add_input("x");
  std::ofstream(path("no_output.onnx"), std::ios::binary) << model.SerializeAsString();
  testing::expect_error([&] { import_onnx(path("no_output.onnx")); },
                        {"node 'lonely' (Relu) has no output"});
  node->add_output("y");
  node->set_op_type("Conv");
  onnx::TensorProto* weights = model.mutable_graph()->add_initializer();
  weights->set_name("w");
  weights->set_data_type(onnx::TensorProto::FLOAT);
  weights->add_dims(1);
  weights->add_float_data(1);
  node->add_input("w");
  std::ofstream(path("flat_weights.onnx"), std::ios::binary) << model.SerializeAsString();
  EXPECT_NE(
      testing::error_of([&] { import_onnx(path("flat_weights.onnx")); }).find("weights of 1 axes"),
      std::string::npos);
}

// Found by the onnx_import fuzzer: dims whose product overflowed int64
// (undefined behaviour) on the way to counting a tensor's values.
TEST_F(OnnxInterchange, TensorDimsThatCannotBeAreAnErrorNamingTheTensor) {
  onnx::TensorProto tensor;
  tensor.set_name("starts");
  tensor.set_data_type(onnx::TensorProto::INT64);
  for (std::int64_t dim : {std::int64_t{1805686233417990000}, std::int64_t{101}}) {
    tensor.add_dims(dim);
  }
  testing::expect_error([&] { interchange::int64_values(tensor); },
                        {"ONNX tensor 'starts' has dims (1805686233417990000, 101): more values "
                         "than an ONNX file can hold; the model is damaged"});
  tensor.clear_dims();
  tensor.add_dims(2);
  tensor.add_dims(-3);
  testing::expect_error([&] { interchange::element_count(tensor); },
                        {"has dims (2, -3): a negative dim"});
  tensor.clear_dims();
  tensor.add_dims(2);
  tensor.add_dims(0);
  EXPECT_EQ(interchange::element_count(tensor), 0);
}

TEST_F(OnnxInterchange, AWeightsPathThatIsADirectoryIsRefusedBeforeTheNetIsWritten) {
  export_onnx(read_net_params_from_text(kPoolingNet, "pool"), "", path("pool.onnx"));
  std::filesystem::create_directories(path("weights_folder"));
  testing::expect_error(
      [&] { import_onnx(path("pool.onnx"), path("pool.prototxt"), path("weights_folder")); },
      {"cannot write '" + path("weights_folder") + "': it is a directory"});
  EXPECT_FALSE(std::filesystem::exists(path("pool.prototxt")));  // no half of an import
  testing::expect_error(
      [&] { import_onnx(path("pool.onnx"), path("pool.prototxt"), path("no/such/x.caffemodel")); },
      {"cannot create a file in '" + path("no/such") + "'"});
  EXPECT_FALSE(std::filesystem::exists(path("pool.prototxt")));
}

TEST_F(OnnxInterchange, AnOpsetOutsideTheWrittenRangeIsRefused) {
  OnnxExportOptions options;
  options.opset = 9;
  const std::string message = testing::error_of([&] {
    export_onnx(read_net_params_from_text(kPoolingNet, "pool"), "", path("x.onnx"), options);
  });
  EXPECT_NE(message.find("choose 13 to 17"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain

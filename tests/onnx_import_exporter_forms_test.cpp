// What torch.onnx.export writes around its layers, read as Caffe layers
// (src/interchange): Identity aliases of initializers, shape arithmetic
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, a chunk's Slice
// bounds) folded into constants, Clip, HardSigmoid, HardSwish, Transpose
// and a squeeze-and-excitation Mul of (N, C, 1, 1) by (N, C, H, W). Each
// imported net is run and its numbers compared with a hand computation;
// tests/onnx/test_torchvision.py runs whole torchvision models.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "interchange/onnx.pb.h"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/onnx.hpp"

namespace xtrain {
namespace {

class OnnxImportExporterForms : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("xtrain_onnx_forms_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    model_.set_ir_version(7);
    model_.add_opset_import()->set_version(13);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void input(const std::string& name, const std::vector<std::int64_t>& dims) {
    onnx::ValueInfoProto* value = model_.mutable_graph()->add_input();
    value->set_name(name);
    value->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    for (std::int64_t dim : dims) {
      value->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(dim);
    }
  }
  void floats(const std::string& name, const std::vector<std::int64_t>& dims,
              const std::vector<float>& values) {
    onnx::TensorProto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (std::int64_t dim : dims) tensor->add_dims(dim);
    for (float value : values) tensor->add_float_data(value);
  }
  void ints(const std::string& name, const std::vector<std::int64_t>& values, bool scalar = false) {
    onnx::TensorProto* tensor = model_.mutable_graph()->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) tensor->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t value : values) tensor->add_int64_data(value);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::string& output) {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_name(output + "_node");
    n->set_op_type(op);
    for (const std::string& name : inputs) n->add_input(name);
    n->add_output(output);
    return *n;
  }
  static void attribute(onnx::NodeProto& n, const std::string& name,
                        const std::vector<std::int64_t>& values) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : values) a->add_ints(v);
  }
  static void int_attribute(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }
  static void string_attribute(onnx::NodeProto& n, const std::string& name,
                               const std::string& value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
  }
  static void attribute(onnx::NodeProto& n, const std::string& name, float value) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
  }
  // A Constant node (not an initializer) of one float, in the node order.
  void constant_node(const std::string& name, float value) {
    onnx::AttributeProto* a = node("Constant", {}, name).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a->mutable_t()->add_float_data(value);
  }
  void output(const std::string& name) { model_.mutable_graph()->add_output()->set_name(name); }

  ImportedNet import() {
    const std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << model_.SerializeAsString();
    return import_onnx(path);
  }
  // The imported net run on `x`: {output blob: values, shape}.
  struct Result {
    std::vector<float> values;
    std::vector<int> shape;
  };
  Result run(const ImportedNet& imported, const std::vector<float>& x, const std::string& top) {
    Net net(imported.net);
    net.copy_trained_layers_from(imported.weights);
    Blob& data = *net.input_blobs()[0];
    EXPECT_EQ(data.count(), x.size());
    std::copy(x.begin(), x.end(), data.mutable_cpu_data());
    net.forward();
    const Blob& out = *net.blob_by_name(top);
    return {std::vector<float>(out.cpu_data(), out.cpu_data() + out.count()), out.shape()};
  }
  static int count_of(const NetParameter& net, const std::string& type) {
    int count = 0;
    for (const LayerParameter& layer : net.layer()) count += layer.type() == type;
    return count;
  }

  std::filesystem::path dir_;
  onnx::ModelProto model_;
};

void expect_near(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-6f) << "element " << i;
  }
}

TEST_F(OnnxImportExporterForms, IdentityOfAnInitializerIsThatConstant) {
  // A 1x1 convolution whose bias PyTorch stored once and names through an
  // Identity (zero biases shared, say): the Conv needs it as a constant.
  input("x", {1, 2, 1, 2});
  floats("w", {2, 2, 1, 1}, {1, 0, 0, 2});
  floats("b", {2}, {0.5f, -1});
  node("Identity", {"b"}, "b_alias");
  node("Conv", {"x", "w", "b_alias"}, "y");
  output("y");
  const ImportedNet imported = import();
  EXPECT_EQ(count_of(imported.net, "Split"), 0);
  // The import builds Nets quietly (warnings only), then logs as before.
  EXPECT_EQ(min_log_severity_of_this_thread(), LogSeverity::kInfo);
  // y[0] = x[0] + 0.5, y[1] = 2 x[1] - 1.
  expect_near(run(imported, {1, 2, 3, 4}, "y").values, {1.5f, 2.5f, 5, 7});
}

TEST_F(OnnxImportExporterForms, ShapeArithmeticBeforeAReshapeFoldsToItsShape) {
  // torch.flatten as newer exporters write it: Reshape(r, Concat(Unsqueeze(
  // Gather(Shape(r), 0)), [-1])), r a computed 1x2x3x2 value.
  input("x", {1, 2, 3, 2});
  node("Relu", {"x"}, "r");
  node("Shape", {"r"}, "shape");
  ints("zero", {0}, true);
  node("Gather", {"shape", "zero"}, "batch");
  ints("axes", {0});
  node("Unsqueeze", {"batch", "axes"}, "batch_1d");
  ints("rest", {-1});
  int_attribute(node("Concat", {"batch_1d", "rest"}, "flat_shape"), "axis", 0);
  node("Reshape", {"r", "flat_shape"}, "y");
  output("y");
  const ImportedNet imported = import();
  ASSERT_EQ(count_of(imported.net, "Reshape"), 1);
  // The batch of the file (1) becomes Caffe's 0: any batch when fine-tuned.
  for (const LayerParameter& layer : imported.net.layer()) {
    if (layer.type() != "Reshape") continue;
    const BlobShape& shape = layer.reshape_param().shape();
    EXPECT_EQ(std::vector<std::int64_t>(shape.dim().begin(), shape.dim().end()),
              (std::vector<std::int64_t>{0, -1}));
  }
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i) - 6;
  const Result y = run(imported, x, "y");
  EXPECT_EQ(y.shape, (std::vector<int>{1, 12}));
  for (float& v : x) v = std::max(v, 0.0f);
  expect_near(y.values, x);
}

TEST_F(OnnxImportExporterForms, ChunkBoundsFromTheShapeFoldIntoTheSlice) {
  // torch.chunk(x, 2, dim=1) on 4 channels: the second half starts at
  // (C + 1) / 2 * 1 and ends at (C + 1) / 2 * 2.
  input("x", {1, 4, 1, 1});
  node("Shape", {"x"}, "shape");
  ints("one", {1}, true);
  node("Gather", {"shape", "one"}, "channels");
  node("Add", {"channels", "one"}, "rounded_up");
  ints("two", {2}, true);
  node("Div", {"rounded_up", "two"}, "half");
  node("Mul", {"half", "two"}, "end");
  node("Unsqueeze", {"half", "axes"}, "starts");
  node("Unsqueeze", {"end", "axes"}, "ends");
  ints("axes", {0});
  ints("axis1", {1});
  node("Slice", {"x", "starts", "ends", "axis1"}, "y");
  output("y");
  const ImportedNet imported = import();
  const Result y = run(imported, {1, 2, 3, 4}, "y");
  EXPECT_EQ(y.shape, (std::vector<int>{1, 2, 1, 1}));
  expect_near(y.values, {3, 4});
}

TEST_F(OnnxImportExporterForms, ClipIsCaffesClipOrAReLU) {
  input("x", {1, 5});
  floats("zero", {}, {0});
  floats("six", {}, {6});
  node("Clip", {"x", "zero", "six"}, "relu6");
  node("Clip", {"x", "zero"}, "relu");
  output("relu6");
  output("relu");
  const ImportedNet imported = import();
  EXPECT_EQ(count_of(imported.net, "Clip"), 1);
  EXPECT_EQ(count_of(imported.net, "ReLU"), 1);
  expect_near(run(imported, {-2, 0.5f, 5, 6.5f, 9}, "relu6").values, {0, 0.5f, 5, 6, 6});
  expect_near(run(imported, {-2, 0.5f, 5, 6.5f, 9}, "relu").values, {0, 0.5f, 5, 6.5f, 9});
}

TEST_F(OnnxImportExporterForms, HardSigmoidAndHardSwishAreALineClippedToZeroAndOne) {
  model_.mutable_opset_import(0)->set_version(14);
  input("x", {1, 5});
  node("HardSigmoid", {"x"}, "gate");  // ONNX's defaults: alpha 0.2, beta 0.5
  attribute(node("HardSigmoid", {"x"}, "torch_gate"), "alpha", 1.0f / 6);
  node("HardSwish", {"x"}, "swish");
  output("gate");
  output("torch_gate");
  output("swish");
  const ImportedNet imported = import();
  const std::vector<float> x = {-4, -1, 0, 1, 4};
  expect_near(run(imported, x, "gate").values, {0, 0.3f, 0.5f, 0.7f, 1});
  expect_near(run(imported, x, "torch_gate").values, {0, 1.0f / 3, 0.5f, 2.0f / 3, 1});
  // x relu6(x + 3) / 6.
  expect_near(run(imported, x, "swish").values, {0, -1.0f / 3, 0, 2.0f / 3, 4});
}

TEST_F(OnnxImportExporterForms, TransposeIsPermute) {
  input("x", {1, 2, 3});
  attribute(node("Transpose", {"x"}, "y"), "perm", std::vector<std::int64_t>{0, 2, 1});
  output("y");
  const Result y = run(import(), {1, 2, 3, 4, 5, 6}, "y");
  EXPECT_EQ(y.shape, (std::vector<int>{1, 3, 2}));
  expect_near(y.values, {1, 4, 2, 5, 3, 6});
}

TEST_F(OnnxImportExporterForms, GateOfOneValuePerChannelScalesTheMaps) {
  // Squeeze-and-excitation: x times its own per-channel mean, the gate first
  // as torchvision writes it.
  input("x", {1, 2, 2, 2});
  node("GlobalAveragePool", {"x"}, "mean");
  node("Mul", {"mean", "x"}, "y");
  output("y");
  const ImportedNet imported = import();
  EXPECT_EQ(count_of(imported.net, "Scale"), 1);
  // Channel means 2.5 and 1.
  expect_near(run(imported, {1, 2, 3, 4, 1, 1, 1, 1}, "y").values, {2.5f, 5, 7.5f, 10, 1, 1, 1, 1});
}

// LayerNorm over the last axis of x (1, 2, 3): per row of 3, (x - mean) /
// sqrt(var + eps) * gamma + beta.
std::vector<float> layer_norm(const std::vector<float>& x, const std::vector<float>& gamma,
                              const std::vector<float>& beta, float eps) {
  std::vector<float> y;
  for (std::size_t row = 0; row < x.size(); row += 3) {
    double mean = 0, variance = 0;
    for (int i = 0; i < 3; ++i) mean += x[row + i] / 3.0;
    for (int i = 0; i < 3; ++i) variance += (x[row + i] - mean) * (x[row + i] - mean) / 3.0;
    for (int i = 0; i < 3; ++i) {
      y.push_back(
          static_cast<float>((x[row + i] - mean) / std::sqrt(variance + eps) * gamma[i] + beta[i]));
    }
  }
  return y;
}

const std::vector<float> kRows = {1, 2, 4, -3, 0, 0.5f};

TEST_F(OnnxImportExporterForms, LayerNormalizationOverTheLastAxis) {
  model_.mutable_opset_import(0)->set_version(17);
  input("x", {1, 2, 3});
  floats("gamma", {3}, {1, 2, 0.5f});
  floats("beta", {3}, {0, 1, -1});
  onnx::NodeProto& norm = node("LayerNormalization", {"x", "gamma", "beta"}, "y");
  int_attribute(norm, "axis", -1);
  attribute(norm, "epsilon", 0.01f);
  output("y");
  expect_near(run(import(), kRows, "y").values, layer_norm(kRows, {1, 2, 0.5f}, {0, 1, -1}, 0.01f));
}

TEST_F(OnnxImportExporterForms, LayerNormAsEarlierOpsetsWriteIt) {
  // ReduceMean (keepdims), Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add:
  // the per-row statistics, shaped (1, 2, 1), broadcast over the rows.
  input("x", {1, 2, 3});
  attribute(node("ReduceMean", {"x"}, "mean"), "axes", std::vector<std::int64_t>{-1});
  node("Sub", {"x", "mean"}, "centred");
  floats("two", {}, {2});
  node("Pow", {"centred", "two"}, "squared");
  attribute(node("ReduceMean", {"squared"}, "variance"), "axes", std::vector<std::int64_t>{-1});
  floats("eps", {}, {0.01f});
  node("Add", {"variance", "eps"}, "shifted");
  node("Sqrt", {"shifted"}, "deviation");
  node("Div", {"centred", "deviation"}, "normalised");
  floats("gamma", {3}, {1, 2, 0.5f});
  node("Mul", {"normalised", "gamma"}, "scaled");
  floats("beta", {3}, {0, 1, -1});
  node("Add", {"scaled", "beta"}, "y");
  output("y");
  expect_near(run(import(), kRows, "y").values, layer_norm(kRows, {1, 2, 0.5f}, {0, 1, -1}, 0.01f));
}

TEST_F(OnnxImportExporterForms, GelusFiveNodesAreOneGeluLayer) {
  // nn.GELU() as torch.onnx.export writes it: the Add's and the last Mul's
  // constants are Constant nodes after the Div that starts the pattern.
  input("x", {1, 4});
  floats("sqrt2", {}, {1.41421356f});
  node("Div", {"x", "sqrt2"}, "d");
  node("Erf", {"d"}, "e");
  constant_node("one", 1);
  node("Add", {"e", "one"}, "a");
  node("Mul", {"x", "a"}, "m");
  constant_node("half", 0.5f);
  node("Mul", {"m", "half"}, "y");
  output("y");
  const ImportedNet imported = import();
  EXPECT_EQ(count_of(imported.net, "GELU"), 1);
  EXPECT_EQ(imported.net.layer_size(), 2);  // the Input and the GELU
  std::vector<float> expected;
  for (double x : {-2.0, -0.5, 0.0, 1.5}) {
    expected.push_back(static_cast<float>(0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))));
  }
  expect_near(run(imported, {-2, -0.5f, 0, 1.5f}, "y").values, expected);
}

TEST_F(OnnxImportExporterForms, AZeroPadInFrontOfAConvIsItsPad) {
  input("x", {1, 1, 2, 2});
  ints("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  node("Pad", {"x", "pads"}, "padded");
  floats("w", {1, 1, 1, 1}, {2});
  node("Conv", {"padded", "w"}, "y");
  output("y");
  const ImportedNet imported = import();
  ASSERT_EQ(imported.net.layer_size(), 2);
  const Result y = run(imported, {1, 2, 3, 4}, "y");
  EXPECT_EQ(y.shape, (std::vector<int>{1, 1, 4, 4}));
  expect_near(y.values, {0, 0, 0, 0, 0, 2, 4, 0, 0, 6, 8, 0, 0, 0, 0, 0});
}

TEST_F(OnnxImportExporterForms, NearestResizeByAWholeFactorIsUpsample) {
  // nn.Upsample(scale_factor=2, mode="nearest") as torch writes it.
  input("x", {1, 1, 2, 2});
  floats("roi", {0}, {});
  floats("scales", {4}, {1, 1, 2, 2});
  onnx::NodeProto& resize = node("Resize", {"x", "roi", "scales"}, "y");
  string_attribute(resize, "mode", "nearest");
  string_attribute(resize, "coordinate_transformation_mode", "asymmetric");
  string_attribute(resize, "nearest_mode", "floor");
  output("y");
  const Result y = run(import(), {1, 2, 3, 4}, "y");
  EXPECT_EQ(y.shape, (std::vector<int>{1, 1, 4, 4}));
  expect_near(y.values, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

TEST_F(OnnxImportExporterForms, AResizeUpsampleCannotComputeIsRefusedNamingTheMode) {
  input("x", {1, 1, 2, 2});
  floats("roi", {0}, {});
  floats("scales", {4}, {1, 1, 2, 2});
  string_attribute(node("Resize", {"x", "roi", "scales"}, "y"), "mode", "nearest");
  output("y");
  testing::expect_error([&] { import(); },
                        {"node 'y_node' (Resize)", "'half_pixel'", "'asymmetric' with 'floor'"});
}

TEST_F(OnnxImportExporterForms, AttentionsMatMulOfTwoValuesIsRefusedSayingWhy) {
  input("q", {1, 2, 3});
  attribute(node("Transpose", {"q"}, "k"), "perm", std::vector<std::int64_t>{0, 2, 1});
  node("MatMul", {"q", "k"}, "scores");
  output("scores");
  testing::expect_error([&] { import(); },
                        {"node 'scores_node' (MatMul)", "two computed values", "InnerProduct"});
}

TEST_F(OnnxImportExporterForms, AMulOfShapesCaffeCannotBroadcastIsRefusedNamingTheNode) {
  input("x", {1, 2, 2, 2});
  node("GlobalAveragePool", {"x"}, "mean");
  attribute(node("Transpose", {"mean"}, "mean_last"), "perm",
            std::vector<std::int64_t>{0, 2, 3, 1});
  node("Mul", {"x", "mean_last"}, "y");
  output("y");
  testing::expect_error([&] { import(); },
                        {"node 'y_node' (Mul)", "1x2x2x2 and 1x1x1x2", "Scale and Bias"});
}

// Found by the fuzzer: an Add of constants with its second input missing
// read a constant that was not there.
TEST_F(OnnxImportExporterForms, AConstantAddWithAMissingInputIsRefusedNamingTheNode) {
  input("x", {1, 2, 1, 1});
  ints("one", {1}, true);
  node("Add", {"one"}, "two");
  node("Reshape", {"x", "two"}, "y");
  output("y");
  testing::expect_error([&] { import(); }, {"node 'two_node' (Add)", "input 1 of Add is missing"});
}

}  // namespace
}  // namespace xtrain

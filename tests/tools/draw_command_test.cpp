// xtrain draw: the DOT text of a net (one node per layer, coloured by family,
// blobs with their shapes on the edges) and its rendering by Graphviz.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tool_runner.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

const std::string kLenet =
    std::string(XTRAIN_SOURCE_DIR) + "/models/lenet/lenet_train_test.prototxt";

// The parts of a DOT file that xtrain draw writes: nodes by the first line of
// their label (the layer name), and edges.
struct DotGraph {
  struct Node {
    std::string id;
    std::string label;  // as written in the file, escapes and all
    std::string attributes;
  };
  struct Edge {
    std::string from;
    std::string to;
    std::string label;
  };
  std::map<std::string, Node> nodes_by_name;       // layers
  std::map<std::string, Node> blob_nodes_by_name;  // inputs and outputs (octagons)
  std::vector<Edge> edges;

  const Node& node(const std::string& name) const {
    static const Node none;
    const auto found = nodes_by_name.find(name);
    return found == nodes_by_name.end() ? none : found->second;
  }
  // The label of the edge from layer `from` to layer `to`, or "(none)".
  std::string edge_label(const std::string& from, const std::string& to) const {
    for (const Edge& edge : edges) {
      if (edge.from == node(from).id && edge.to == node(to).id) return edge.label;
    }
    return "(none)";
  }
  // The label of the edge from layer `from` to the output blob `blob`.
  std::string output_edge_label(const std::string& from, const std::string& blob) const {
    const auto output = blob_nodes_by_name.find(blob);
    if (output == blob_nodes_by_name.end()) return "(no such output)";
    for (const Edge& edge : edges) {
      if (edge.from == node(from).id && edge.to == output->second.id) return edge.label;
    }
    return "(none)";
  }
};

DotGraph parse_dot(const std::string& text) {
  static const std::regex node_line(R"re(^  (\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$)re");
  static const std::regex edge_line(R"re(^  (\w+) -> (\w+) \[label="((?:[^"\\]|\\.)*)"\];$)re");
  DotGraph graph;
  std::istringstream lines(text);
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_match(line, match, edge_line)) {
      graph.edges.push_back({match[1], match[2], match[3]});
    } else if (std::regex_match(line, match, node_line)) {
      const std::string label = match[2];
      const std::string name = label.substr(0, label.find("\\n"));
      const bool blob = std::string(match[3]).find("octagon") != std::string::npos;
      (blob ? graph.blob_nodes_by_name : graph.nodes_by_name)[name] = {match[1], label, match[3]};
    }
  }
  return graph;
}

std::string read_text(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// LeNet with its Data layers (one per phase) replaced by `type` (DummyData or
// Input) of the same batch sizes, or pointed at `lmdb` when type is "Data".
std::string lenet_variant(const TempDir& dir, const std::string& type,
                          const std::string& lmdb = "") {
  NetParameter net = read_net_params_from_text_file(kLenet);
  for (LayerParameter& layer : *net.mutable_layer()) {
    if (layer.type() != "Data") continue;
    const unsigned batch = layer.data_param().batch_size();
    if (type == "Data") {
      layer.mutable_data_param()->set_source(lmdb);
      continue;
    }
    layer.clear_data_param();
    layer.clear_transform_param();
    layer.set_type(type);
    BlobShape image;
    for (int dim : {static_cast<int>(batch), 1, 28, 28}) image.add_dim(dim);
    BlobShape label;
    label.add_dim(static_cast<int>(batch));
    if (type == "DummyData") {
      *layer.mutable_dummy_data_param()->add_shape() = image;
      *layer.mutable_dummy_data_param()->add_shape() = label;
    } else {
      *layer.mutable_input_param()->add_shape() = image;
      *layer.mutable_input_param()->add_shape() = label;
    }
  }
  const std::string path = dir.file("lenet_" + type + ".prototxt");
  write_proto_to_text_file(net, path);
  return path;
}

DotGraph draw_dot(const std::string& net, const std::string& flags, const TempDir& dir,
                  std::string* log = nullptr) {
  const std::string out = dir.file("net.dot");
  const ToolResult result =
      run_tool(tool_path("xtrain") + " draw " + net + " " + out + " " + flags);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  if (log != nullptr) *log = result.output;
  return parse_dot(read_text(out));
}

bool graphviz_installed() { return run_tool("command -v dot").exit_code == 0; }

const char* const kLenetTrainLayers[] = {"fashion_mnist", "conv1", "pool1", "conv2", "pool2",
                                         "ip1",           "relu1", "ip2",   "loss"};

TEST(DrawCommand, DummyDataLenetHasEveryLayerAndTheShapesOnItsEdges) {
  TempDir dir("draw");
  const DotGraph graph = draw_dot(lenet_variant(dir, "DummyData"), "", dir);
  for (const char* layer : kLenetTrainLayers) {
    EXPECT_FALSE(graph.node(layer).id.empty()) << layer;
  }
  EXPECT_EQ(graph.nodes_by_name.count("accuracy"), 0u) << "accuracy is a TEST-phase layer";
  EXPECT_EQ(graph.edge_label("fashion_mnist", "conv1"), "data\\n64x1x28x28");
  EXPECT_EQ(graph.edge_label("conv1", "pool1"), "conv1\\n64x20x24x24");
  EXPECT_EQ(graph.edge_label("pool1", "conv2"), "pool1\\n64x20x12x12");
  EXPECT_EQ(graph.edge_label("conv2", "pool2"), "conv2\\n64x50x8x8");
  EXPECT_EQ(graph.edge_label("pool2", "ip1"), "pool2\\n64x50x4x4");
  EXPECT_EQ(graph.edge_label("ip2", "loss"), "ip2\\n64x10");
  EXPECT_EQ(graph.edge_label("fashion_mnist", "loss"), "label\\n64");
  // The loss, consumed by no layer, is an output of its own.
  EXPECT_EQ(graph.output_edge_label("loss", "loss"), "scalar");
  EXPECT_EQ(graph.blob_nodes_by_name.size(), 1u);
  EXPECT_NE(graph.node("conv1").label.find("kernel 5x5, stride 1x1, pad 0x0\\noutputs 20"),
            std::string::npos)
      << graph.node("conv1").label;
  EXPECT_NE(graph.node("pool1").label.find("MAX 2x2, stride 2x2"), std::string::npos);
  EXPECT_NE(graph.node("ip1").label.find("outputs 500"), std::string::npos);
}

TEST(DrawCommand, InPlaceLayerSitsOnTheEdgeOfItsBlob) {
  TempDir dir("draw");
  const DotGraph graph = draw_dot(lenet_variant(dir, "DummyData"), "", dir);
  EXPECT_EQ(graph.edge_label("ip1", "relu1"), "ip1\\n64x500");
  EXPECT_EQ(graph.edge_label("relu1", "ip2"), "ip1\\n64x500");
  EXPECT_EQ(graph.edge_label("ip1", "ip2"), "(none)") << "ip2 reads ip1 after the ReLU";
  EXPECT_NE(graph.node("relu1").label.find("ReLU (in place)"), std::string::npos);
}

TEST(DrawCommand, InputLenetInTheTestPhase) {
  TempDir dir("draw");
  const DotGraph graph = draw_dot(lenet_variant(dir, "Input"), "--phase=TEST", dir);
  EXPECT_FALSE(graph.node("accuracy").id.empty());
  EXPECT_EQ(graph.edge_label("conv1", "pool1"), "conv1\\n100x20x24x24");
  EXPECT_EQ(graph.edge_label("ip2", "accuracy"), "ip2\\n100x10");
  EXPECT_EQ(graph.edge_label("fashion_mnist", "accuracy"), "label\\n100");
}

TEST(DrawCommand, EachLayerFamilyHasItsColour) {
  TempDir dir("draw");
  const std::string net = dir.write("families.prototxt", R"(name: "families"
layer { name: "input" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 2 dim: 3 dim: 8 dim: 8 } shape { dim: 2 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
layer { name: "norm" type: "LRN" bottom: "conv" top: "norm" }
layer { name: "relu" type: "ReLU" bottom: "norm" top: "norm" }
layer { name: "pool" type: "Pooling" bottom: "norm" top: "pool"
        pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "flat" type: "Flatten" bottom: "pool" top: "flat" }
layer { name: "ip" type: "InnerProduct" bottom: "flat" top: "ip"
        inner_product_param { num_output: 3 } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)");
  const DotGraph graph = draw_dot(net, "", dir);
  const std::map<std::string, std::string> colours = {
      {"input", "#8DD3C7"}, {"conv", "#FF5050"}, {"norm", "#B3DE69"}, {"relu", "#6495ED"},
      {"pool", "#FF9900"},  {"flat", "#D9D9D9"}, {"ip", "#CC33FF"},   {"loss", "#FFD700"}};
  for (const auto& [layer, colour] : colours) {
    EXPECT_NE(graph.node(layer).attributes.find("fillcolor=\"" + colour + "\""), std::string::npos)
        << layer << ": " << graph.node(layer).attributes;
  }
  EXPECT_EQ(graph.edge_label("conv", "norm"), "conv\\n2x4x8x8");
  EXPECT_EQ(graph.edge_label("pool", "flat"), "pool\\n2x4x4x4");
  EXPECT_EQ(graph.edge_label("flat", "ip"), "flat\\n2x64");
}

TEST(DrawCommand, NetThatCannotBeBuiltIsDrawnWithoutShapesAndAWarning) {
  TempDir dir("draw");
  const std::string missing = dir.file("no_such_lmdb");
  std::string log;
  const DotGraph graph = draw_dot(lenet_variant(dir, "Data", missing), "", dir, &log);
  EXPECT_CONTAINS(log, "without blob shapes");
  EXPECT_CONTAINS(log, missing);
  for (const char* layer : kLenetTrainLayers) {
    EXPECT_FALSE(graph.node(layer).id.empty()) << layer;
  }
  EXPECT_EQ(graph.edge_label("conv1", "pool1"), "conv1");
}

TEST(DrawCommand, NamesWithQuotesAndBackslashesAreEscaped) {
  TempDir dir("draw");
  const std::string net = dir.write("quotes.prototxt", R"(name: "say \"hi\""
layer { name: "in \"put\" \\ n" type: "Input" top: "a\"b"
        input_param { shape { dim: 1 dim: 2 } } }
layer { name: "relu" type: "ReLU" bottom: "a\"b" top: "c" }
)");
  const std::string out = dir.file("quotes.dot");
  const ToolResult result = run_tool(tool_path("xtrain") + " draw " + net + " " + out);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string text = read_text(out);
  EXPECT_CONTAINS(text, "digraph \"say \\\"hi\\\"\"");
  EXPECT_CONTAINS(text, "label=\"in \\\"put\\\" \\\\ n\\nInput\"");
  EXPECT_CONTAINS(text, "[label=\"a\\\"b\\n1x2\"]");
  if (!graphviz_installed()) GTEST_SKIP() << "Graphviz's dot is not installed";
  // Graphviz reads it back: the escaping is valid DOT.
  const ToolResult parsed = run_tool("dot -Tsvg " + out + " -o " + dir.file("quotes.svg"));
  EXPECT_EQ(parsed.exit_code, 0) << parsed.output;
  EXPECT_CONTAINS(read_text(dir.file("quotes.svg")), "in &quot;put&quot; \\ n");
}

TEST(DrawCommand, RendersSvgWithGraphviz) {
  if (!graphviz_installed()) GTEST_SKIP() << "Graphviz's dot is not installed";
  TempDir dir("draw");
  const std::string out = dir.file("lenet.svg");
  const ToolResult result =
      run_tool(tool_path("xtrain") + " draw " + lenet_variant(dir, "DummyData") + " " + out);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string svg = read_text(out);
  EXPECT_CONTAINS(svg, "<svg");
  EXPECT_CONTAINS(svg, "64x20x24x24");
  EXPECT_CONTAINS(svg, "#ff5050");  // conv1's fill, as Graphviz writes it
}

TEST(DrawCommand, MissingGraphvizIsOneLineSayingToInstallIt) {
  TempDir dir("draw");
  const std::string net = lenet_variant(dir, "DummyData");
  const std::string line =
      expect_one_line_error(run_tool("PATH=" + dir.path() + " " + tool_path("xtrain") + " draw " +
                                     net + " " + dir.file("lenet.svg")),
                            "xtrain draw");
  EXPECT_CONTAINS(line, "install Graphviz");
  EXPECT_FALSE(std::filesystem::exists(dir.file("lenet.svg")));
  // The DOT text needs no Graphviz.
  const ToolResult dot_only = run_tool("PATH=" + dir.path() + " " + tool_path("xtrain") + " draw " +
                                       net + " " + dir.file("lenet.dot"));
  EXPECT_EQ(dot_only.exit_code, 0) << dot_only.output;
}

// A stand-in for Graphviz's dot, first on PATH.
std::string fake_dot(const TempDir& dir, const std::string& script) {
  const std::string bin = dir.file("fake_bin");
  std::filesystem::create_directories(bin);
  const std::string path = dir.write("fake_bin/dot", "#!/bin/sh\n" + script);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return "PATH=" + bin + ":$PATH ";
}

TEST(DrawCommand, GraphvizGetsTheDotTextOnStdinAndItsOutputIsWritten) {
  TempDir dir("draw");
  const std::string net = lenet_variant(dir, "DummyData");
  // This dot echoes its input: the output file is then the DOT text.
  const std::string path = fake_dot(dir, "test \"$1\" = -Tpdf || exit 9\ncat\n");
  const ToolResult result =
      run_tool(path + tool_path("xtrain") + " draw " + net + " " + dir.file("lenet.pdf"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_text(dir.file("lenet.pdf")).rfind("digraph \"LeNet\" {", 0), 0u);
  EXPECT_CONTAINS(read_text(dir.file("lenet.pdf")), "64x20x24x24");
}

TEST(DrawCommand, GraphvizFailureReportsItsExitCodeAndStderr) {
  TempDir dir("draw");
  const std::string net = lenet_variant(dir, "DummyData");
  const std::string path =
      fake_dot(dir, "cat >/dev/null\necho 'Error: <stdin>: syntax error in line 3' >&2\nexit 3\n");
  const std::string line = expect_one_line_error(
      run_tool(path + tool_path("xtrain") + " draw " + net + " " + dir.file("lenet.svg")),
      "xtrain draw");
  EXPECT_CONTAINS(line, "exit code 3");
  EXPECT_CONTAINS(line, "syntax error in line 3");
  EXPECT_FALSE(std::filesystem::exists(dir.file("lenet.svg")));
}

TEST(DrawCommand, BadNetFileIsOneLineNamingIt) {
  TempDir dir("draw");
  const std::string missing = dir.file("no_such.prototxt");
  EXPECT_CONTAINS(expect_one_line_error(run_tool(tool_path("xtrain") + " draw " + missing + " " +
                                                 dir.file("out.dot")),
                                        "xtrain draw"),
                  missing);
  const std::string broken = dir.write("broken.prototxt", "layer {\n  name: \"a\"\n  tpye: 1\n}\n");
  const std::string line = expect_one_line_error(
      run_tool(tool_path("xtrain") + " draw " + broken + " " + dir.file("out.dot")), "xtrain draw");
  EXPECT_CONTAINS(line, broken + ":3:");
}

TEST(DrawCommand, RankdirAndFormatFlags) {
  TempDir dir("draw");
  const std::string net = lenet_variant(dir, "DummyData");
  const std::string out = dir.file("lenet.txt");
  const ToolResult result =
      run_tool(tool_path("xtrain") + " draw " + net + " " + out + " --format=dot --rankdir=TB");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(read_text(out), "rankdir=TB");
  EXPECT_CONTAINS(expect_one_line_error(run_tool(tool_path("xtrain") + " draw " + net + " " +
                                                 dir.file("a.dot") + " --rankdir=UP"),
                                        "xtrain draw"),
                  "--rankdir=UP");
  EXPECT_CONTAINS(
      expect_one_line_error(
          run_tool(tool_path("xtrain") + " draw " + net + " " + dir.file("a.txt")), "xtrain draw"),
      "--format");
  EXPECT_CONTAINS(expect_one_line_error(run_tool(tool_path("xtrain") + " draw " + net + " " +
                                                 dir.file("a.svg") + " --format=jpeg"),
                                        "xtrain draw"),
                  "--format=jpeg");
}

}  // namespace
}  // namespace xtrain::testing

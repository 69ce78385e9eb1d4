// `xtrain upgrade`: old nets, solvers and weights rewritten in the current
// format, never over their input, with a one-line error when it cannot.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tool_runner.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

const char* kV1Net = R"(name: "tiny"
input: "data"
input_dim: 2 input_dim: 3 input_dim: 1 input_dim: 1
input: "label"
input_dim: 2 input_dim: 1 input_dim: 1 input_dim: 1
layers { name: "ip" type: INNER_PRODUCT bottom: "data" top: "ip" blobs_lr: 1 blobs_lr: 2
         weight_decay: 1 weight_decay: 0
         inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layers { name: "relu" type: RELU bottom: "ip" top: "ip" }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "ip" bottom: "label" top: "loss" }
)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::string upgrade(const std::string& args) { return tool_path("xtrain") + " upgrade " + args; }

void expect_upgrade_error(const ToolResult& result, const std::string& needle) {
  EXPECT_CONTAINS(expect_one_line_error(result, "xtrain upgrade"), needle);
}

TEST(UpgradeCli, V1NetRoundTripsToTheCurrentFormat) {
  TempDir dir("upgrade_cli");
  const std::string old_net = dir.write("old.prototxt", kV1Net);
  const std::string new_net = dir.file("new.prototxt");
  const ToolResult result = run_tool(upgrade("--model=" + old_net + " --output=" + new_net));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "V1 layer format");
  EXPECT_CONTAINS(result.output, "input/input_shape/input_dim");
  EXPECT_EQ(read_file(old_net), kV1Net);  // the input is left alone

  NetParameter written;
  read_proto_from_text_file(new_net, &written);  // no upgrade on this read
  EXPECT_EQ(written.layers_size(), 0);
  EXPECT_EQ(written.input_size(), 0);
  ASSERT_EQ(written.layer_size(), 4);
  EXPECT_EQ(written.layer(0).type(), "Input");
  EXPECT_EQ(written.layer(1).type(), "InnerProduct");
  ASSERT_EQ(written.layer(1).param_size(), 2);
  EXPECT_EQ(written.layer(1).param(1).lr_mult(), 2);
  EXPECT_EQ(written.layer(1).param(1).decay_mult(), 0);

  // The same as upgrading on load, and upgrading again changes nothing.
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kError);
  const NetParameter on_load = read_net_params_from_text_file(old_net);
  set_min_log_severity(saved);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(written, on_load));
  const std::string newer = dir.file("newer.prototxt");
  const ToolResult again = run_tool(upgrade("--model=" + new_net + " --output=" + newer));
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_CONTAINS(again.output, "already in the current format");
  EXPECT_EQ(read_file(newer), read_file(new_net));

  // The old file is usable as it is, with the upgrade warning.
  const ToolResult timed =
      run_tool(tool_path("xtrain") + " time --iterations=1 --model=" + old_net);
  EXPECT_EQ(timed.exit_code, 0) << timed.output;
  EXPECT_CONTAINS(timed.output, "deprecated V1 layer format");
}

TEST(UpgradeCli, RefusesToOverwriteItsInput) {
  TempDir dir("upgrade_cli");
  const std::string old_net = dir.write("old.prototxt", kV1Net);
  expect_upgrade_error(run_tool(upgrade("--model=" + old_net + " --output=" + old_net)),
                       "is the input file");
  // Spelt differently, still the same file.
  expect_upgrade_error(
      run_tool(upgrade("--model=old.prototxt --output=./sub/../old.prototxt"), dir.path()),
      "is the input file");
  std::filesystem::create_directories(dir.file("sub"));
  expect_upgrade_error(
      run_tool(upgrade("--model=old.prototxt --output=./sub/../old.prototxt"), dir.path()),
      "is the input file");
  EXPECT_EQ(read_file(old_net), kV1Net);
}

TEST(UpgradeCli, NeedsOneInputAndAnOutput) {
  TempDir dir("upgrade_cli");
  const std::string old_net = dir.write("old.prototxt", kV1Net);
  expect_upgrade_error(run_tool(upgrade("--output=x.prototxt")), "exactly one of");
  expect_upgrade_error(
      run_tool(upgrade("--model=" + old_net + " --solver=" + old_net + " --output=x")),
      "exactly one of");
  expect_upgrade_error(run_tool(upgrade("--model=" + old_net)), "--output");
  expect_upgrade_error(run_tool(upgrade("--model=" + dir.file("missing.prototxt") +
                                        " --output=" + dir.file("x.prototxt"))),
                       "missing.prototxt");
}

TEST(UpgradeCli, UnsupportedLayerTypeIsAOneLineErrorNamingTheLayer) {
  TempDir dir("upgrade_cli");
  const std::string old_net =
      dir.write("old.prototxt", "layers { name: \"blank\" type: NONE top: \"x\" }\n");
  const std::string new_net = dir.file("new.prototxt");
  expect_upgrade_error(run_tool(upgrade("--model=" + old_net + " --output=" + new_net)), "'blank'");
  EXPECT_FALSE(std::filesystem::exists(new_net));
}

TEST(UpgradeCli, SolverTypeEnumBecomesTheString) {
  TempDir dir("upgrade_cli");
  const std::string old_solver =
      dir.write("old_solver.prototxt",
                "net: \"lenet.prototxt\"\nbase_lr: 0.01\nsolver_type: ADAGRAD\nmax_iter: 10\n");
  const std::string new_solver = dir.file("new_solver.prototxt");
  const ToolResult result = run_tool(upgrade("--solver=" + old_solver + " --output=" + new_solver));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "solver_type");
  SolverParameter written;
  read_proto_from_text_file(new_solver, &written);
  EXPECT_EQ(written.type(), "AdaGrad");
  EXPECT_FALSE(written.has_solver_type());
  EXPECT_EQ(written.net(), "lenet.prototxt");  // paths are kept as written
  EXPECT_EQ(written.max_iter(), 10);

  const std::string both = dir.write("both.prototxt", "solver_type: ADAM\ntype: \"Adam\"\n");
  expect_upgrade_error(run_tool(upgrade("--solver=" + both + " --output=" + new_solver)),
                       "keep only the type field");
}

TEST(UpgradeCli, V1WeightsBecomeCurrentBinaryWeights) {
  TempDir dir("upgrade_cli");
  NetParameter old_weights;
  old_weights.set_name("tiny");
  old_weights.add_input("data");
  V1LayerParameter* ip = old_weights.add_layers();
  ip->set_name("ip");
  ip->set_type(V1LayerParameter::INNER_PRODUCT);
  ip->add_bottom("data");
  ip->add_top("ip");
  for (int blob = 0; blob < 2; ++blob) {
    BlobProto* values = ip->add_blobs();
    values->set_num(1);
    values->set_channels(1);
    values->set_height(blob == 0 ? 4 : 1);
    values->set_width(blob == 0 ? 3 : 4);
    for (int i = 0; i < (blob == 0 ? 12 : 4); ++i) values->add_data(0.25f * i - blob);
  }
  const std::string old_path = dir.file("old.caffemodel");
  write_proto_to_binary_file(old_weights, old_path);
  const std::string new_path = dir.file("new.caffemodel");
  const ToolResult result = run_tool(upgrade("--weights=" + old_path + " --output=" + new_path));
  ASSERT_EQ(result.exit_code, 0) << result.output;

  NetParameter written;
  read_proto_from_binary_file(new_path, &written);
  EXPECT_EQ(written.layers_size(), 0);
  EXPECT_EQ(written.input_size(), 0);
  ASSERT_EQ(written.layer_size(), 1);
  EXPECT_EQ(written.layer(0).name(), "ip");
  EXPECT_EQ(written.layer(0).type(), "InnerProduct");
  ASSERT_EQ(written.layer(0).blobs_size(), 2);
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(written.layer(0).blobs(0), ip->blobs(0)));
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(written.layer(0).blobs(1), ip->blobs(1)));
}

}  // namespace
}  // namespace xtrain::testing

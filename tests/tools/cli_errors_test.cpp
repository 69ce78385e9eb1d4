// Bad input to the tools: each case is one clear line naming the file, the
// line, the layer or the shapes, and exit code 1 — never a crash.
#include <gtest/gtest.h>

#include <regex>

#include "lmdb_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/input_file.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

const char* kTinyNet = R"(name: "tiny"
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: %d weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

std::string tiny_net(int outputs) {
  char text[1024];
  std::snprintf(text, sizeof(text), kTinyNet, outputs);
  return text;
}

std::string tiny_solver(const std::string& net_path, const std::string& prefix) {
  return "net: \"" + net_path + "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 2\n" +
         "display: 1\nsnapshot_prefix: \"" + prefix + "\"\nsolver_mode: CPU\nrandom_seed: 1\n";
}

TEST(CliErrors, MisspeltFieldNamesFileLineAndField) {
  TempDir dir("cli");
  const std::string net = dir.write(
      "net.prototxt", "name: \"n\"\nlayer {\n  name: \"conv1\"\n  tpye: \"Convolution\"\n}\n");
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, net + ":4:");
  EXPECT_CONTAINS(line, "tpye");
}

TEST(CliErrors, UnknownLayerTypeListsTheKnownOnes) {
  TempDir dir("cli");
  const std::string net =
      dir.write("net.prototxt", "layer { name: \"c\" type: \"Convolutoin\" }\n");
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, "'Convolutoin'");
  EXPECT_CONTAINS(line, "Convolution, ");
  EXPECT_CONTAINS(line, "InnerProduct");
}

TEST(CliErrors, BottomNoLayerProducesNamesLayerAndBlob) {
  TempDir dir("cli");
  const std::string net = dir.write("net.prototxt", R"(
    layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }
    layer { name: "relu" type: "ReLU" bottom: "dat" top: "relu" })");
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, "'relu'");
  EXPECT_CONTAINS(line, "'dat'");
}

TEST(CliErrors, ShapeMismatchNamesLayerAndShapes) {
  TempDir dir("cli");
  const std::string net = dir.write("net.prototxt", R"(
    layer { name: "data" type: "Input" top: "data" top: "label"
            input_param { shape { dim: 4 dim: 10 } shape { dim: 3 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "data" bottom: "label" top: "loss" })");
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, "'loss'");
  EXPECT_CONTAINS(line, "3");
}

std::string data_net(const std::string& source, const std::string& transform = "") {
  return "layer { name: \"d\" type: \"Data\" top: \"data\" top: \"label\" " + transform +
         " data_param { source: \"" + source + "\" batch_size: 2 backend: LMDB } }\n";
}

TEST(CliErrors, MissingLmdbNamesThePath) {
  TempDir dir("cli");
  const std::string net = dir.write("net.prototxt", data_net(dir.file("no_such_lmdb")));
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, dir.file("no_such_lmdb"));
}

TEST(CliErrors, EmptyLmdbSaysItIsEmpty) {
  TempDir dir("cli");
  write_datum_lmdb(dir.file("empty_lmdb"), 1, 2, 2, {});
  const std::string net = dir.write("net.prototxt", data_net(dir.file("empty_lmdb")));
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, dir.file("empty_lmdb"));
  EXPECT_CONTAINS(line, "empty");
}

TEST(CliErrors, MeanFileOfTheWrongSizeNamesBothShapes) {
  TempDir dir("cli");
  write_datum_lmdb(dir.file("lmdb"), 1, 2, 2, {{0, {1, 2, 3, 4}}, {1, {5, 6, 7, 8}}});
  BlobProto mean;
  for (int d : {1, 1, 3, 3}) mean.mutable_shape()->add_dim(d);
  for (int i = 0; i < 9; ++i) mean.add_data(0.0f);
  write_proto_to_binary_file(mean, dir.file("mean.binaryproto"));
  const std::string net = dir.write(
      "net.prototxt", data_net(dir.file("lmdb"), "transform_param { mean_file: \"" +
                                                     dir.file("mean.binaryproto") + "\" }"));
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time --model=" + net), "xtrain time");
  EXPECT_CONTAINS(line, "mean.binaryproto");
}

// A directory or an empty file where a file is expected: one line naming
// what was expected, not a net of nothing or a stream error later.
TEST(CliErrors, DirectoriesAndEmptyNetsWhereFilesBelong) {
  TempDir dir("cli_paths");
  const std::string folder = dir.path();
  const std::string net = dir.write("tiny.prototxt", tiny_net(2));
  const std::string empty = dir.write("empty.prototxt", "");
  const std::string solver_of_folder = dir.write("solver.prototxt", tiny_solver(folder, "x"));
  const std::string xtrain = tool_path("xtrain");
  struct Case {
    std::string command, tool, expected;
  };
  const Case cases[] = {
      {" time --model=" + folder, "xtrain time",
       "the net prototxt '" + folder + "' is a directory, not a file"},
      {" time --model=" + empty, "xtrain time",
       "the net prototxt '" + empty + "' defines no layers"},
      {" train --solver=" + folder, "xtrain train",
       "the solver prototxt '" + folder + "' is a directory, not a file"},
      {" train --solver=" + solver_of_folder, "xtrain train",
       "the net prototxt '" + folder + "' is a directory, not a file"},
      {" test --model=" + net + " --weights=" + folder, "xtrain test",
       "the weights '" + folder + "' is a directory, not a file"},
      {" train --solver=" + solver_of_folder + " --snapshot=" + folder, "xtrain train",
       "is a directory, not a file"},
      {" time --model=" + dir.file("missing.prototxt"), "xtrain time",
       "cannot open the net prototxt '" + dir.file("missing.prototxt") +
           "': No such file or directory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.command);
    EXPECT_CONTAINS(expect_one_line_error(run_tool(xtrain + c.command), c.tool), c.expected);
  }
}

// Solver values that cannot be meant: an error naming the field, not a run
// that climbs the loss, trains nothing or never tests.
TEST(CliErrors, SolverValuesThatCannotBeMeant) {
  TempDir dir("cli_solver_values");
  const std::string net = dir.write("tiny.prototxt", tiny_net(2));
  const std::string good = tiny_solver(net, dir.file("tiny"));
  struct Case {
    std::string solver, expected;
  };
  const Case cases[] = {
      {std::regex_replace(good, std::regex("base_lr: 0.1"), "base_lr: -0.01"),
       "base_lr: -0.01 is negative"},
      {"net: \"" + net + "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\n", "has no max_iter"},
      {good + "test_interval: 1\n", "sets test_interval: 1 but no test_iter"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.solver);
    const std::string solver = dir.write("solver.prototxt", c.solver);
    EXPECT_CONTAINS(
        expect_one_line_error(run_tool(tool_path("xtrain") + " train --solver=" + solver),
                              "xtrain train"),
        c.expected);
  }
}

// The flags' -1 means "the solver's value"; -7 or nan was taken for it.
TEST(CliErrors, OverrideFlagsBelowZeroOtherThanMinusOneAreRefused) {
  TempDir dir("cli_override_flags");
  const std::string net = dir.write("tiny.prototxt", tiny_net(2));
  const std::string solver = dir.write("solver.prototxt", tiny_solver(net, dir.file("tiny")));
  const std::pair<const char*, const char*> cases[] = {
      {"--max_iter=-5", "--max_iter=-5: give the iterations to train (>= 0), or leave it out"},
      {"--max_seconds=nan", "--max_seconds=nan: give seconds >= 0"},
      {"--snapshot_minutes=-3", "--snapshot_minutes=-3: give minutes >= 0 (0: off)"},
      {"--snapshot_keep=-9", "--snapshot_keep=-9: give how many snapshots to keep"},
  };
  for (const auto& [flag, expected] : cases) {
    EXPECT_CONTAINS(expect_one_line_error(
                        run_tool(tool_path("xtrain") + " train --solver=" + solver + " " + flag),
                        "xtrain train"),
                    expected);
  }
}

// A job's placement flags without a place to meet, or half of them: one
// line saying what to give (never a lone process that thinks it is rank 1).
TEST(CliErrors, RendezvousFlagsAloneOrHalfGivenAreRefused) {
  TempDir dir("cli_rendezvous_flags");
  const std::string net = dir.write("tiny.prototxt", tiny_net(2));
  const std::string solver = dir.write("solver.prototxt", tiny_solver(net, dir.file("tiny")));
  const std::pair<std::string, const char*> cases[] = {
      {"--rank=1 --world_size=2", "--rank and --world_size place the process in a job that "
                                  "meets in a shared directory: give --rendezvous=DIR too"},
      {"--rendezvous=" + dir.path() + " --rank=1",
       "give both --rank and --world_size (rank 1, world_size unset)"},
      {"--rendezvous=" + dir.path() + " --rank=2 --world_size=2",
       "--rank=2 is not below --world_size=2"},
  };
  for (const auto& [flags, expected] : cases) {
    EXPECT_CONTAINS(expect_one_line_error(
                        run_tool("env -u RANK -u WORLD_SIZE -u SLURM_PROCID -u SLURM_NTASKS " +
                                 tool_path("xtrain") + " train --solver=" + solver + " " + flags),
                        "xtrain train"),
                    expected);
  }
}

// Train and test nets that disagree on a shared layer's shapes: the error
// says which net has which shape.
TEST(CliErrors, TrainAndTestNetsDisagreeingOnAShapeNameEach) {
  TempDir dir("cli_train_test_shapes");
  const std::string train_net = dir.write("train.prototxt", tiny_net(2));
  const std::string test_net = dir.write(
      "test.prototxt", std::regex_replace(tiny_net(2), std::regex("dim: 4 dim: 3"), "dim: 4 dim: 5"));
  const std::string solver = dir.write(
      "solver.prototxt", "train_net: \"" + train_net + "\"\ntest_net: \"" + test_net +
                             "\"\ntest_iter: 1\ntest_interval: 1\nbase_lr: 0.1\n"
                             "lr_policy: \"fixed\"\nmax_iter: 1\nsolver_mode: CPU\nsnapshot_prefix: \"" +
                             dir.file("x") + "\"\n");
  const std::string line = expect_one_line_error(
      run_tool(tool_path("xtrain") + " train --solver=" + solver), "xtrain train");
  EXPECT_CONTAINS(line, "layer 'ip' param 0 has shape 2 3 (6) in the TRAIN net 'tiny' and 2 5 "
                        "(10) in the TEST net 'tiny'");
}

// Sizes that cannot be meant: the layer is named, and nothing is logged or
// allocated in gigabytes first.
TEST(CliErrors, InsaneSizesNameTheLayer) {
  TempDir dir("cli_sizes");
  const std::string huge_output = dir.write(
      "huge.prototxt", std::regex_replace(tiny_net(2), std::regex("num_output: 2"),
                                          "num_output: 1000000000"));
  std::string line = expect_one_line_error(
      run_tool(tool_path("xtrain") + " time --model=" + huge_output), "xtrain time");
  EXPECT_CONTAINS(line, "layer 'ip' (InnerProduct)");
  EXPECT_CONTAINS(line, "more than 2^31");

  const std::string long_name = dir.write(
      "long.prototxt", std::regex_replace(tiny_net(2), std::regex("name: \"ip\""),
                                          "name: \"" + std::string(5000, 'x') + "\""));
  const ToolResult result = run_tool(tool_path("xtrain") + " time --model=" + long_name);
  line = expect_one_line_error(result, "xtrain time");
  EXPECT_CONTAINS(line, "the name of layer #2 is 5000 characters long");
  EXPECT_LT(result.output.size(), 4000u) << "the name is not logged";
}

class TrainedTinyNet : public ::testing::Test {
 protected:
  void SetUp() override {
    net_ = dir_.write("tiny.prototxt", tiny_net(2));
    solver_ = dir_.write("solver.prototxt", tiny_solver(net_, dir_.file("tiny")));
    const ToolResult trained =
        run_tool(tool_path("xtrain") + " train --solver=" + solver_, dir_.path());
    ASSERT_EQ(trained.exit_code, 0) << trained.output;
  }
  TempDir dir_{"cli_trained"};
  std::string net_;
  std::string solver_;
};

// Resuming a training that already reached max_iter says so.
TEST_F(TrainedTinyNet, ResumingAtMaxIterSaysThereIsNothingToTrain) {
  const ToolResult result =
      run_tool(tool_path("xtrain") + " train --solver=" + solver_ + " --snapshot=auto");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Already at iteration 2, max_iter is 2: nothing to train");
  EXPECT_CONTAINS(result.output, "s for 0 iterations (from 2 to 2)");
}

// Weights that leave a learnable layer at its random initial values: scoring
// refuses them (a cut .caffemodel, another net's weights), fine-tuning warns.
TEST_F(TrainedTinyNet, WeightsThatMissALayerAreRefusedForScoring) {
  const std::string weights = dir_.file("tiny_iter_2.caffemodel");
  NetParameter cut;
  read_proto_from_binary_file(weights, &cut);
  ASSERT_GT(cut.layer_size(), 0);
  cut.clear_layer();  // a file cut before its layers
  cut.add_layer()->set_name("data");
  write_proto_to_binary_file(cut, dir_.file("cut.caffemodel"));
  const std::string test = tool_path("xtrain") + " test --iterations=1 --model=" + net_;
  const std::string line = expect_one_line_error(
      run_tool(test + " --weights=" + dir_.file("cut.caffemodel")), "xtrain test");
  EXPECT_CONTAINS(line, "layer 'ip' of net 'tiny' has no weights in '" +
                            dir_.file("cut.caffemodel") + "'");
  EXPECT_CONTAINS(line, "--allow_missing_weights");

  ToolResult allowed =
      run_tool(test + " --weights=" + dir_.file("cut.caffemodel") + " --allow_missing_weights");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_CONTAINS(allowed.output, "keeps its random initial values (--allow_missing_weights)");
  EXPECT_EQ(run_tool(test + " --weights=" + weights).exit_code, 0) << "the whole file is fine";

  const std::string renamed = dir_.write(
      "renamed.prototxt", std::regex_replace(tiny_net(2), std::regex("\"ip\""), "\"ip_new\""));
  const std::string renamed_solver =
      dir_.write("renamed_solver.prototxt", tiny_solver(renamed, dir_.file("renamed")));
  const ToolResult tuned = run_tool(tool_path("xtrain") + " train --solver=" + renamed_solver +
                                    " --weights=" + weights);
  EXPECT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_CONTAINS(tuned.output, "layer 'ip_new' of net 'tiny' has no weights in '" + weights);
  EXPECT_CONTAINS(tuned.output, "expected for layers new to this net when fine-tuning");
}

TEST_F(TrainedTinyNet, ASolverStateCutShortSaysSo) {
  const std::string state = dir_.file("tiny_iter_2.solverstate");
  const std::string bytes = read_input_file(state, "the solver state");
  const std::string cut = dir_.write("cut.solverstate", bytes.substr(0, bytes.size() * 9 / 10));
  const std::string line = expect_one_line_error(
      run_tool(tool_path("xtrain") + " train --solver=" + solver_ + " --snapshot=" + cut),
      "xtrain train");
  EXPECT_CONTAINS(line, "'" + cut + "' is a solver state cut short");
  EXPECT_CONTAINS(line, "--snapshot=auto");
}

TEST_F(TrainedTinyNet, SnapshotGivenACaffemodelSaysWhatItExpected) {
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " train --solver=" + solver_ +
                                     " --snapshot=" + dir_.file("tiny_iter_2.caffemodel")),
                            "xtrain train");
  EXPECT_CONTAINS(line, "tiny_iter_2.caffemodel");
  EXPECT_CONTAINS(line, "solverstate");
}

TEST_F(TrainedTinyNet, SnapshotOfAnotherNetIsRefused) {
  const std::string other_net = dir_.write("other.prototxt", tiny_net(5));
  const std::string other_solver =
      dir_.write("other_solver.prototxt", tiny_solver(other_net, dir_.file("other")));
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " train --solver=" + other_solver +
                                     " --snapshot=" + dir_.file("tiny_iter_2.solverstate")),
                            "xtrain train");
  EXPECT_CONTAINS(line, "tiny_iter_2.solverstate");
}

TEST_F(TrainedTinyNet, WeightsOfADifferentShapeNameTheLayerAndSuggestRenaming) {
  const std::string other_net = dir_.write("other.prototxt", tiny_net(5));
  const std::string other_solver =
      dir_.write("other_solver.prototxt", tiny_solver(other_net, dir_.file("other")));
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " train --solver=" + other_solver +
                                     " --weights=" + dir_.file("tiny_iter_2.caffemodel")),
                            "xtrain train");
  EXPECT_CONTAINS(line, "'ip'");
  EXPECT_CONTAINS(line, "(2, 3)");
  EXPECT_CONTAINS(line, "(5, 3)");
  EXPECT_CONTAINS(line, "rename");
}

TEST_F(TrainedTinyNet, TrainOnAGpuThatIsNotThereIsOneLine) {
  const ToolResult result =
      run_tool(tool_path("xtrain") + " train --solver=" + solver_ + " --gpu=0");
  if (result.exit_code == 0) GTEST_SKIP() << "a GPU is present";
  const std::string line = expect_one_line_error(result, "xtrain train");
  EXPECT_CONTAINS(line, "--gpu=0");
}

TEST(CliErrors, GpuOnAMachineWithoutOneIsOneLine) {
  const ToolResult result = run_tool(tool_path("xtrain") + " device_query --gpu=0");
  if (result.exit_code == 0) GTEST_SKIP() << "a GPU is present: " << result.output;
  const std::string line = expect_one_line_error(result, "xtrain device_query");
  EXPECT_CONTAINS(line, "GPU");
}

}  // namespace
}  // namespace xtrain::testing

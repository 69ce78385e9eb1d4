// `xtrain time` as a user runs it: the thread configuration it logs, the
// per-layer benchmark, and whole training iterations with --training_step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

const std::string kLenet = std::string(XTRAIN_SOURCE_DIR) + "/bench/nets/lenet.prototxt";

TEST(TimeCommand, LogsTheThreadPoolItWasGiven) {
  const ToolResult result =
      run_tool(tool_path("xtrain") + " time --model=" + kLenet + " --iterations=2 --threads=1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "CPU: 1 threads (of ");
  EXPECT_CONTAINS(result.output, "one OpenMP pool");
  EXPECT_CONTAINS(result.output, "BLAS: OpenBLAS");
  EXPECT_TRUE(
      std::regex_search(result.output, std::regex("forward-backward [0-9.]+ ms per iteration")))
      << result.output;
  EXPECT_TRUE(std::regex_search(result.output, std::regex("peak resident memory [0-9.]+ MiB")))
      << result.output;
}

TEST(TimeCommand, TrainingStepTimesWholeSolverIterations) {
  const ToolResult result =
      run_tool(tool_path("xtrain") + " time --model=" + kLenet + " --iterations=2 --training_step");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      result.output, match,
      std::regex("training iteration \\(forward, backward, SGD update\\) ([0-9.]+) ms "
                 "\\(batch 64: [0-9]+ images/s\\)")))
      << result.output;
  EXPECT_GT(std::stod(match[1]), 0.0);
  EXPECT_CONTAINS(result.output, "peak resident memory");
  // The solver trained: it logged iterations, not a per-layer table.
  EXPECT_EQ(result.output.find("Average time per layer"), std::string::npos) << result.output;
}

TEST(TimeCommand, BadThreadCountAndPhaseAreOneLineErrors) {
  ToolResult result =
      run_tool(tool_path("xtrain") + " time --model=" + kLenet + " --iterations=1 --threads=-2");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(last_line(result.output), "xtrain time: error: the thread count must be 0");
  result = run_tool(tool_path("xtrain") + " time --model=" + kLenet +
                    " --iterations=1 --training_step --phase=TEST");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(last_line(result.output), "--training_step times training");
}

// --cpu_algorithm_search=timed (the default outside the test harness) times
// each convolution's kernels once and keeps the choice for the next run.
TEST(TimeCommand, TimedConvolutionChoicesAreCachedForTheNextRun) {
  TempDir cache("time_cache");
  const std::string command = "XTRAIN_CACHE_DIR=" + cache.path() + " " + tool_path("xtrain") +
                              " time --model=" + kLenet +
                              " --iterations=1 --cpu_algorithm_search=timed";
  ToolResult result = run_tool(command);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "layer 'conv1' (Convolution) 64x1x28x28 -> 20x24x24");
  EXPECT_CONTAINS(result.output, ": timed (search took ");
  EXPECT_TRUE(std::filesystem::exists(cache.file("cpu_convolutions.tsv")));
  // Each line keeps the CPUs other processes took from ours while it was
  // timed; a choice timed beside busy neighbours (a parallel test run) is
  // timed again when the next run finds the machine quiet.
  std::ifstream file(cache.file("cpu_convolutions.tsv"));
  std::string line;
  bool timed_while_busy = false;
  int choices = 0;
  while (std::getline(file, line)) {
    const std::size_t load = line.rfind(" load=");
    if (line.empty() || line[0] == '#') continue;
    ASSERT_NE(load, std::string::npos) << line;
    ++choices;
    timed_while_busy = timed_while_busy || std::stod(line.substr(load + 6)) > 0.25;
  }
  EXPECT_EQ(choices, 2);  // LeNet's two convolutions
  result = run_tool(command);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  if (!timed_while_busy) {
    EXPECT_CONTAINS(result.output,
                    ": timed earlier (cached in " + cache.file("cpu_convolutions.tsv"));
    EXPECT_EQ(result.output.find("search took"), std::string::npos) << result.output;
  } else if (result.output.find("search took") != std::string::npos) {
    EXPECT_CONTAINS(result.output, "and the machine is quiet now (");
  }
}

TEST(TimeCommand, UnknownAlgorithmSearchIsAOneLineError) {
  const ToolResult result = run_tool(tool_path("xtrain") + " time --model=" + kLenet +
                                     " --iterations=1 --cpu_algorithm_search=fast");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(last_line(result.output), "--cpu_algorithm_search=fast is not a search mode");
}

}  // namespace
}  // namespace xtrain::testing

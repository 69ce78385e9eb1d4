// Asking for a GPU the machine cannot give: every way of asking (--gpu with
// an id, a list, "all"; solver_mode: GPU; every command that computes) ends
// in one clear line and exit code 1, never a crash. On a machine with a GPU
// the cases that would succeed skip; hiding the GPUs with
// CUDA_VISIBLE_DEVICES="" makes the error reproducible everywhere.
#include <gtest/gtest.h>

#include "tiny_net.hpp"
#include "tool_runner.hpp"
#include "xtrain/device.hpp"

namespace xtrain::testing {
namespace {

class GpuCli : public ::testing::Test {
 protected:
  GpuCli() : dir_("gpu_cli") {
    net_ = dir_.write("net.prototxt", kTinyTrainableNet);
    solver_ = write_solver("CPU");
  }

  std::string write_solver(const std::string& mode) {
    return dir_.write("solver_" + mode + ".prototxt",
                      "net: \"" + net_ + "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\nmax_iter: 2\n" +
                          "snapshot_prefix: \"" + dir_.file("tiny") + "\"\nsolver_mode: " + mode +
                          "\nrandom_seed: 1\n");
  }

  // Runs `args` with no GPU visible unless `hide_gpus` is false and checks
  // the one-line error of `tool`; returns the line.
  std::string error_line(const std::string& tool, const std::string& args, bool hide_gpus = true) {
    const std::string environment = hide_gpus ? "CUDA_VISIBLE_DEVICES= " : "";
    const ToolResult result = run_tool(environment + tool_path("xtrain") + " " + args);
    return expect_one_line_error(result, tool);
  }

  TempDir dir_;
  std::string net_;
  std::string solver_;
};

TEST_F(GpuCli, TrainOnGpuZeroWithoutOne) {
  const std::string line = error_line("xtrain train", "train --solver=" + solver_ + " --gpu=0");
  EXPECT_CONTAINS(line, "--gpu=0");
  EXPECT_CONTAINS(line, "run on the CPU");
}

TEST_F(GpuCli, TrainOnTwoGpusOrAllWithoutAny) {
  EXPECT_CONTAINS(error_line("xtrain train", "train --solver=" + solver_ + " --gpu=0,1"),
                  "--gpu=0,1");
  EXPECT_CONTAINS(error_line("xtrain train", "train --solver=" + solver_ + " --gpu=all"),
                  "--gpu=all");
}

TEST_F(GpuCli, SolverModeGpuWithoutOne) {
  const std::string line = error_line("xtrain train", "train --solver=" + write_solver("GPU"));
  EXPECT_CONTAINS(line, "solver_mode: GPU");
}

TEST_F(GpuCli, TestAndTimeOnGpuWithoutOne) {
  // The device is chosen before the weights are read: they need not exist.
  EXPECT_CONTAINS(error_line("xtrain test", "test --model=" + net_ + " --weights=" +
                                                dir_.file("w.caffemodel") + " --gpu=0"),
                  "--gpu=0");
  EXPECT_CONTAINS(error_line("xtrain time", "time --model=" + net_ + " --gpu=0"), "--gpu=0");
}

TEST_F(GpuCli, DeviceQueryWithoutAGpu) {
  const std::string line = error_line("xtrain device_query", "device_query");
  EXPECT_CONTAINS(line, "no GPU to query");
  EXPECT_CONTAINS(error_line("xtrain device_query", "device_query --gpu=all"), "no GPU");
}

// The reason names the cause: a CPU-only build, or what the driver said.
TEST_F(GpuCli, TheReasonSaysWhyThereIsNoGpu) {
  const std::string line = error_line("xtrain train", "train --solver=" + solver_ + " --gpu=0");
  if (cuda_compiled_in()) {
    EXPECT_EQ(line.find("built without CUDA"), std::string::npos) << line;
  } else {
    EXPECT_CONTAINS(line, "built without CUDA");
  }
}

// With the GPUs this machine really has (none here): a wrong id or a
// malformed list is still one line.
TEST_F(GpuCli, MalformedOrMissingIdsAreOneLine) {
  std::string why;
  if (cuda_device_count(&why) == 0) {
    // No GPU at all: the first problem reported is that there is none.
    EXPECT_CONTAINS(error_line("xtrain train", "train --solver=" + solver_ + " --gpu=x", false),
                    "GPU");
    return;
  }
  EXPECT_CONTAINS(error_line("xtrain train", "train --solver=" + solver_ + " --gpu=x", false),
                  "'x' is not a GPU id");
  EXPECT_CONTAINS(error_line("xtrain train", "train --solver=" + solver_ + " --gpu=99", false),
                  "GPU 99 does not exist");
  EXPECT_CONTAINS(error_line("xtrain device_query", "device_query --gpu=1x", false),
                  "'1x' is not a GPU id");
}

}  // namespace
}  // namespace xtrain::testing

// Each rank of a GPU job touches its own GPU and no other, from the first
// CUDA call on: on exclusive-process GPUs (LSF, Slurm) a stray context on
// GPU 0 makes the rank that owns GPU 0 fail with "busy".
//
// The xtrain tool runs with tests/tools/fake_cudart.c preloaded: a stand-in
// for the runtime's device calls that pretends to have a few GPUs, logs every
// device selection and context use in order, and ends the process at the
// first stream creation (exit code 42), after the device choice. Runs on any
// machine, GPU or not, in builds with the CUDA backend.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tiny_net.hpp"
#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

#ifdef XTRAIN_FAKE_CUDART

// The launchers' variables, cleared so that the scenario alone sets them.
const char* kClearedEnvironment =
    "env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK "
    "-u PMI_RANK -u PMI_SIZE -u MPI_LOCALRANKID -u SLURM_PROCID -u SLURM_NTASKS "
    "-u SLURM_LOCALID -u CUDA_VISIBLE_DEVICES -u CUDA_MODULE_LOADING ";

class GpuBinding : public ::testing::Test {
 protected:
  GpuBinding() : dir_("gpu_binding") {
    const std::string net = dir_.write("net.prototxt", kTinyTrainableNet);
    solver_ = dir_.write("solver.prototxt", "net: \"" + net +
                                                "\"\nbase_lr: 0.1\nlr_policy: \"fixed\"\n"
                                                "max_iter: 2\nsnapshot_prefix: \"" +
                                                dir_.file("tiny") + "\"\nrandom_seed: 1\n");
  }

  // Runs `xtrain train <flags>` with `environment` (VAR=value ...) and the
  // stand-in pretending to have `gpus` GPUs; returns the log of its calls.
  std::vector<std::string> calls_of(const std::string& environment, int gpus,
                                    const std::string& flags, int stop_at_stream = 1) {
    const std::string log = dir_.file("calls_" + std::to_string(runs_++) + ".log");
    const std::string command =
        std::string(kClearedEnvironment) + "LD_PRELOAD=" + XTRAIN_FAKE_CUDART +
        " FAKE_CUDART_LOG=" + log + " FAKE_CUDA_DEVICE_COUNT=" + std::to_string(gpus) +
        " FAKE_CUDART_STOP_AT_STREAM=" + std::to_string(stop_at_stream) + " " + environment +
        " " + tool_path("xtrain") + " train --solver=" + solver_ + " " + flags;
    const ToolResult result = run_tool(command);
    EXPECT_EQ(result.exit_code, 42) << "the stand-in should have ended the run at its first "
                                       "stream; output:\n"
                                    << result.output;
    std::vector<std::string> lines;
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  TempDir dir_;
  std::string solver_;
  int runs_ = 0;
};

// The GPUs named by "select N" and "touch N ..." lines, in order.
std::vector<int> gpus_touched(const std::vector<std::string>& calls) {
  std::vector<int> gpus;
  for (const std::string& call : calls) {
    for (const char* prefix : {"select ", "touch ", "attribute "}) {
      const std::string word = prefix;
      if (call.rfind(word, 0) == 0) gpus.push_back(std::stoi(call.substr(word.size())));
    }
  }
  return gpus;
}

std::string joined(const std::vector<std::string>& calls) {
  std::string text;
  for (const std::string& call : calls) text += call + "\n";
  return text;
}

TEST(GpuBindingStandIn, IsPreloadedAndLogs) {
  TempDir dir("gpu_binding_probe");
  const std::string log = dir.file("calls.log");
  const ToolResult result = run_tool(std::string(kClearedEnvironment) +
                                     "LD_PRELOAD=" + XTRAIN_FAKE_CUDART + " FAKE_CUDART_LOG=" +
                                     log + " FAKE_CUDA_DEVICE_COUNT=3 " + tool_path("xtrain") +
                                     " device_query --gpu=all");
  // device_query counts, then describes each GPU without a context (the real
  // runtime answers the property query here, which fails without a driver).
  std::ifstream in(log);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, "count") << result.output;
}

// mpirun -np 4 on a 4-GPU node: local rank 3 takes GPU 3, and its first
// CUDA call that selects or uses a GPU is on GPU 3.
TEST_F(GpuBinding, AnOpenMpiRankTouchesOnlyTheGpuOfItsLocalRank) {
  const std::vector<std::string> calls = calls_of(
      "OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_LOCAL_RANK=3", 4, "--gpu=0");
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), "stop") << joined(calls);
  const std::vector<int> gpus = gpus_touched(calls);
  ASSERT_FALSE(gpus.empty()) << joined(calls);
  for (const int gpu : gpus) EXPECT_EQ(gpu, 3) << joined(calls);
}

// solver_mode: GPU, no --gpu, under srun with 2 ranks per node: local rank 1
// takes GPU 1, never GPU 0 (the solver's device_id).
TEST_F(GpuBinding, ASlurmRankWithSolverModeGpuTakesItsLocalRanksGpu) {
  std::ofstream(solver_, std::ios::app) << "solver_mode: GPU\ndevice_id: 0\n";
  const std::vector<std::string> calls =
      calls_of("SLURM_NTASKS=4 SLURM_PROCID=3 SLURM_LOCALID=1", 2, "");
  const std::vector<int> gpus = gpus_touched(calls);
  ASSERT_FALSE(gpus.empty()) << joined(calls);
  for (const int gpu : gpus) EXPECT_EQ(gpu, 1) << joined(calls);
}

// srun --gpus-per-task=1 binds each task to its own GPU through
// CUDA_VISIBLE_DEVICES: the one visible GPU, 0, whatever the local rank.
TEST_F(GpuBinding, ARankBoundToOneGpuByTheLauncherUsesIt) {
  const std::vector<std::string> calls = calls_of(
      "CUDA_VISIBLE_DEVICES=3 SLURM_NTASKS=8 SLURM_PROCID=7 SLURM_LOCALID=3", 1, "--gpu=0");
  const std::vector<int> gpus = gpus_touched(calls);
  ASSERT_FALSE(gpus.empty()) << joined(calls);
  for (const int gpu : gpus) EXPECT_EQ(gpu, 0) << joined(calls);
}

// Two GPUs visible per task (CUDA_VISIBLE_DEVICES=4,5) and local rank 3: the
// local rank picks among them, 3 % 2 = 1.
TEST_F(GpuBinding, TheLocalRankPicksAmongTheVisibleGpus) {
  const std::vector<std::string> calls = calls_of(
      "CUDA_VISIBLE_DEVICES=4,5 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=3 "
      "OMPI_COMM_WORLD_LOCAL_RANK=3",
      2, "--gpu=0");
  const std::vector<int> gpus = gpus_touched(calls);
  ASSERT_FALSE(gpus.empty()) << joined(calls);
  for (const int gpu : gpus) EXPECT_EQ(gpu, 1) << joined(calls);
}

// One process, --gpu=2,3: the GPUs named, each checked in turn, and never
// GPU 0 or 1.
TEST_F(GpuBinding, SeveralGpusInOneProcessTouchOnlyThoseNamed) {
  const std::vector<std::string> calls = calls_of("", 4, "--gpu=2,3", /*stop_at_stream=*/2);
  EXPECT_EQ(calls.back(), "stop") << joined(calls);
  const std::vector<int> gpus = gpus_touched(calls);
  ASSERT_FALSE(gpus.empty()) << joined(calls);
  EXPECT_EQ(gpus.front(), 2) << joined(calls);
  EXPECT_EQ(gpus.back(), 3) << joined(calls);
  for (const int gpu : gpus) EXPECT_TRUE(gpu == 2 || gpu == 3) << joined(calls);
}

// Data-parallel runs (several GPUs in one process, or GPU ranks) load CUDA's
// modules eagerly, set before the runtime's first call; one GPU keeps the
// driver's default, and a user's own setting always stays.
TEST_F(GpuBinding, DataParallelRunsLoadCudaModulesEagerly) {
  const auto loading_at_first_call = [](const std::vector<std::string>& calls) {
    for (const std::string& call : calls) {
      if (call.rfind("module_loading ", 0) == 0) return call.substr(15);
    }
    return std::string("(no call)");
  };
  EXPECT_EQ(loading_at_first_call(calls_of("", 4, "--gpu=2,3", 2)), "EAGER");
  EXPECT_EQ(loading_at_first_call(calls_of(
                "OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_LOCAL_RANK=1", 2,
                "--gpu=0")),
            "EAGER");
  EXPECT_EQ(loading_at_first_call(calls_of("", 4, "--gpu=1")), "unset");
  EXPECT_EQ(loading_at_first_call(calls_of("CUDA_MODULE_LOADING=LAZY", 4, "--gpu=2,3", 2)),
            "LAZY");
}

// A rank whose local rank has no GPU says so, naming the rank, before any
// context exists.
TEST_F(GpuBinding, ALocalRankBeyondTheGpusIsOneClearLine) {
  const std::string log = dir_.file("beyond.log");
  const ToolResult result = run_tool(
      std::string(kClearedEnvironment) + "LD_PRELOAD=" + XTRAIN_FAKE_CUDART +
      " FAKE_CUDART_LOG=" + log +
      " FAKE_CUDA_DEVICE_COUNT=2 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_RANK=2 "
      "OMPI_COMM_WORLD_LOCAL_RANK=2 " +
      tool_path("xtrain") + " train --solver=" + solver_ + " --gpu=0");
  const std::string line = expect_one_line_error(result, "xtrain train");
  EXPECT_NE(line.find("rank 2 of 4 (local rank 2, openmpi)"), std::string::npos) << line;
  EXPECT_NE(line.find("would take GPU 2, but only 2 GPUs are visible"), std::string::npos) << line;
  std::ifstream in(log);
  std::vector<std::string> calls;
  for (std::string call; std::getline(in, call);) calls.push_back(call);
  EXPECT_TRUE(gpus_touched(calls).empty()) << joined(calls);
}

#endif

}  // namespace
}  // namespace xtrain::testing

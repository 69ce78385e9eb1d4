// The MPI communicator in real jobs: tests/mpi/comm_probe.cpp started by
// mpirun with 2 processes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "mpi_runner.hpp"
#include "tool_runner.hpp"
#include "xtrain/comm.hpp"

namespace xtrain {
namespace {

using namespace testing;

#ifdef XTRAIN_COMM_PROBE
#define SKIP_WITHOUT_MPIRUN() \
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (apt-get install openmpi-bin)"
#else
#define SKIP_WITHOUT_MPIRUN() GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)"
#endif

std::string probe(const std::string& arguments) {
#ifdef XTRAIN_COMM_PROBE
  return std::string(XTRAIN_COMM_PROBE) + " " + arguments;
#else
  return arguments;
#endif
}

TEST(MpiCommunicator, SumsAndBroadcastsOnEveryRank) {
  SKIP_WITHOUT_MPIRUN();
  const ToolResult result = run_tool(mpirun(2, probe("collectives")));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "rank 0 of 2: collectives ok");
  EXPECT_CONTAINS(result.output, "rank 1 of 2: collectives ok");
  EXPECT_EQ(result.output.find("MISMATCH"), std::string::npos) << result.output;
}

TEST(MpiCommunicator, ThreeRanks) {
  SKIP_WITHOUT_MPIRUN();
  const ToolResult result = run_tool(mpirun(3, probe("collectives")));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "rank 2 of 3: collectives ok");
}

// Rank 1 hangs: rank 0 must give up after the timeout with a clear message,
// and the job must end (MPI_Abort at exit) instead of waiting for rank 1.
TEST(MpiCommunicator, HangingRankFailsTheOthersWithinTheTimeout) {
  SKIP_WITHOUT_MPIRUN();
  const auto start = std::chrono::steady_clock::now();
  const ToolResult result = run_tool(mpirun(2, probe("timeout 2")));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "timeout had to stop mpirun:\n" << result.output;
  // Rank 0 asked rank 1 whether it is there (it sleeps, so it does not
  // answer) and names it with its host.
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_CONTAINS(result.output,
                  "comm_probe: error: rank 0 of 2: allreduce of 431,080 values did not finish "
                  "within 2 s: another rank died or hangs: rank 1 (host " +
                      std::string(host) +
                      ") did not answer within 2 s (dead, stopped, or cut off from this rank's "
                      "network; raise --collective_timeout if it is just slow)");
  EXPECT_EQ(result.output.find("allreduce returned"), std::string::npos) << result.output;
  EXPECT_GE(seconds, 2.0);
  EXPECT_LT(seconds, 2.0 + 8.0) << result.output;
  std::printf("time to failure: %.2f s (timeout 2 s)\n", seconds);
}

TEST(MpiCommunicator, DeadRankEndsTheJob) {
  SKIP_WITHOUT_MPIRUN();
  const auto start = std::chrono::steady_clock::now();
  const ToolResult result = run_tool(mpirun(2, probe("die 30")));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "timeout had to stop mpirun:\n" << result.output;
  EXPECT_EQ(result.output.find("allreduce returned"), std::string::npos) << result.output;
  EXPECT_LT(seconds, 30.0 + 8.0) << result.output;
  std::printf("time to failure: %.2f s (timeout 30 s)\n", seconds);
}

// Slurm's variables of a batch script, but the process was not started by
// srun: MPI sees a job of one, and the communicator must say so, not hang.
TEST(MpiCommunicator, LauncherAndMpiDisagreeIsAClearError) {
#ifndef XTRAIN_COMM_PROBE
  GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)";
#endif
  const ToolResult result = run_tool(
      "env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE "
      "SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_LOCALID=0 timeout 60 " +
      probe("collectives"));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_CONTAINS(result.output,
                  "comm_probe: error: the launcher (slurm) says this is rank 0 of 2 but MPI "
                  "says rank 0 of 1");
}

}  // namespace
}  // namespace xtrain

// Data-parallel training over processes, as a user runs it: `mpirun -np 2
// xtrain train` with batch B must give the weights of one process with batch
// 2B (the data layers shard every global batch, Dropout draws by global item,
// the gradients are averaged, every rank applies the same update), and a rank
// that hangs or dies must end the job with a clear error, not a hang.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <thread>

#include "distributed/data_parallel_fixture.hpp"
#include "lmdb_fixture.hpp"
#include "mpi_runner.hpp"
#include "resume/training_process.hpp"
#include "tool_runner.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/device.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

#define SKIP_WITHOUT_MPI()                                                        \
  if (!mpi_available()) GTEST_SKIP() << "this build has no MPI (libopenmpi-dev)"; \
  if (!have_mpirun()) GTEST_SKIP() << "mpirun is not installed (openmpi-bin)"

class DataParallel : public ::testing::Test {
 protected:
  DataParallel() { write_images(source_, 60); }

  // A solver for batch `batch` whose snapshots go to `name`.
  std::string solver(const std::string& name, int batch, int max_iter,
                     const std::string& extra = "") {
    const std::string net = dir_.write(name + "_net.prototxt", net_text(source_, batch));
    return dir_.write(name + "_solver.prototxt",
                      "net: '" + net +
                          "'\nbase_lr: 0.05\nmomentum: 0.9\nweight_decay: 0.0005\n"
                          "lr_policy: 'step'\ngamma: 0.5\nstepsize: 4\niter_size: 2\n"
                          "max_iter: " +
                          std::to_string(max_iter) +
                          "\ndisplay: 1\nrandom_seed: 11\nsolver_mode: CPU\n"
                          "snapshot_prefix: '" +
                          dir_.file(name) + "'\n" + extra);
  }

  static std::string train(const std::string& solver_path, const std::string& flags = "") {
    return tool_path("xtrain") + " train --solver=" + solver_path + " " + flags;
  }

  NetParameter weights(const std::string& name, int iteration) {
    NetParameter model;
    read_proto_from_binary_file(
        dir_.file(name) + "_iter_" + std::to_string(iteration) + ".caffemodel", &model);
    return model;
  }

  TempDir dir_{"data_parallel"};
  std::string source_ = dir_.file("images_lmdb");
};

TEST_F(DataParallel, TwoRanksWithBatchBTrainLikeOneProcessWithBatch2B) {
  SKIP_WITHOUT_MPI();
  constexpr int kIterations = 10;
  const ToolResult alone = run_tool(train(solver("alone", 8, kIterations)));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  const ToolResult ranks = run_tool(mpirun(2, train(solver("ranks", 4, kIterations))));
  ASSERT_EQ(ranks.exit_code, 0) << ranks.output;
  EXPECT_CONTAINS(ranks.output, "Data parallel: 2 ranks");
  EXPECT_CONTAINS(ranks.output, "batch 4 per rank x 2 ranks x iter_size 2 = 16 images per update");

  const double difference =
      max_relative_difference(weights("ranks", kIterations), weights("alone", kIterations));
  EXPECT_LE(difference, 1e-5);
  // The comparison can fail: one process with batch 4 (half the data per
  // update) ends elsewhere.
  ASSERT_EQ(run_tool(train(solver("half", 4, kIterations))).exit_code, 0);
  EXPECT_GT(max_relative_difference(weights("half", kIterations), weights("alone", kIterations)),
            1e-3);
  // The final loss line (a forward pass of the final weights) is over both
  // ranks' batches too, not the root's alone.
  const std::regex final_loss("Iteration 10, loss = ([0-9.e+-]+)");
  std::smatch alone_loss, ranks_loss;
  ASSERT_TRUE(std::regex_search(alone.output, alone_loss, final_loss)) << alone.output;
  ASSERT_TRUE(std::regex_search(ranks.output, ranks_loss, final_loss)) << ranks.output;
  EXPECT_NEAR(std::stod(ranks_loss[1]), std::stod(alone_loss[1]),
              1e-4 * std::stod(alone_loss[1]));
  // Only the root writes snapshots (one pair, no second rank's files).
  EXPECT_EQ(run_tool("ls " + dir_.file("ranks") + "_iter_* | wc -l").output, "2\n");
}

// Runs a long 2-rank job in the background and returns once rank 1 exists
// and the root has displayed an iteration.
class RunningJob {
 public:
  RunningJob(const std::string& command, const std::string& log, const std::string& marker)
      : process_(command, log), log_(log) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      rank1_ = find_rank_process(marker, 1);
      if (rank1_ > 0 && read_text(log_).find("Iteration 2 ") != std::string::npos) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  pid_t rank1() const { return rank1_; }
  // Exit code of mpirun, and the seconds it took from now.
  std::pair<int, double> wait() {
    const auto start = std::chrono::steady_clock::now();
    const int code = process_.wait_exit_code();
    return {code, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  }

 private:
  BackgroundProcess process_;
  std::string log_;
  pid_t rank1_ = -1;
};

TEST_F(DataParallel, AHangingRankFailsTheJobWithinTheCollectiveTimeout) {
  SKIP_WITHOUT_MPI();
  const std::string solver_path = solver("hang", 4, 100000000);
  RunningJob job(mpirun(2, train(solver_path, "--collective_timeout=3")), dir_.file("hang.log"),
                 solver_path);
  ASSERT_GT(job.rank1(), 0) << read_text(dir_.file("hang.log"));
  ::kill(job.rank1(), SIGSTOP);  // alive, but never joins the next exchange
  const auto [code, seconds] = job.wait();
  ::kill(job.rank1(), SIGKILL);
  const std::string log = read_text(dir_.file("hang.log"));
  EXPECT_NE(code, 0) << log;
  EXPECT_NE(code, 124) << "mpirun had to be stopped by `timeout`:\n" << log;
  EXPECT_LT(seconds, 3 + 20) << log;
  EXPECT_CONTAINS(log, "xtrain train: error: rank 0 of 2: allreduce of");
  EXPECT_CONTAINS(log, "did not finish within 3 s: another rank died or hangs");
}

TEST_F(DataParallel, AKilledRankEndsTheJobWithAnError) {
  SKIP_WITHOUT_MPI();
  const std::string solver_path = solver("killed", 4, 100000000);
  RunningJob job(mpirun(2, train(solver_path, "--collective_timeout=30")), dir_.file("killed.log"),
                 solver_path);
  ASSERT_GT(job.rank1(), 0) << read_text(dir_.file("killed.log"));
  ::kill(job.rank1(), SIGKILL);
  const auto [code, seconds] = job.wait();
  const std::string log = read_text(dir_.file("killed.log"));
  EXPECT_NE(code, 0) << log;
  EXPECT_NE(code, 124) << "mpirun had to be stopped by `timeout`:\n" << log;
  EXPECT_LT(seconds, 30 + 20) << log;
  // Open MPI names the dead rank; or the survivor's timeout does.
  EXPECT_TRUE(log.find("signal 9") != std::string::npos ||
              log.find("did not finish within 30 s") != std::string::npos)
      << log;
}

// A rank that fails once the job has formed (here: its net file is missing,
// as on a node without the shared file system) ends the job at once with its
// error; the others used to wait out --collective_timeout for it.
TEST_F(DataParallel, ARankThatFailsAtSetupEndsTheJobAtOnce) {
  SKIP_WITHOUT_MPI();
  const std::string good = solver("setup_good", 4, 3);
  const std::string missing_net = dir_.write(
      "setup_bad_solver.prototxt", "net: '" + dir_.file("absent_net.prototxt") +
                                       "'\nbase_lr: 0.01\nlr_policy: 'fixed'\nmax_iter: 3\n"
                                       "solver_mode: CPU\n");
  // Two programs in one job (MPMD): rank 0 the good solver, rank 1 the bad.
  const auto started = std::chrono::steady_clock::now();
  const ToolResult result =
      run_tool(mpirun(1, train(good, "--collective_timeout=60") + " : -np 1 " +
                             train(missing_net, "--collective_timeout=60")));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_LT(seconds, 40) << "the job waited for the collective timeout:\n" << result.output;
  EXPECT_CONTAINS(result.output, "xtrain train: error: cannot open the net prototxt '" +
                                     dir_.file("absent_net.prototxt") + "'");
  EXPECT_CONTAINS(result.output, "this rank ended with an error: MPI_Abort ends the whole job");
}

// GPU ranks on a machine without a GPU: every rank says so in one line and
// the job ends (no hang waiting for a rank that never joins).
TEST_F(DataParallel, GpuRanksWithoutAGpuEndTheJobWithOneLine) {
  SKIP_WITHOUT_MPI();
  std::string why;
  if (cuda_device_count(&why) > 0) GTEST_SKIP() << "this machine has a GPU";
  const ToolResult result = run_tool(mpirun(2, train(solver("gpu", 4, 3), "--gpu=0")));
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.exit_code, 124) << "mpirun had to be stopped by `timeout`:\n" << result.output;
  EXPECT_CONTAINS(result.output, "xtrain train: error: --gpu=0 asks for a GPU");
  EXPECT_EQ(result.output.find("Check failed"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace xtrain::testing

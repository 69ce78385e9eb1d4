// Data-parallel training without MPI: `xtrain train --rendezvous=DIR` started
// N times (by hand with --rank/--world_size, by srun's variables, by
// torchrun's), the processes meeting in a temporary directory and summing
// over Gloo, must give the weights of one process with N times the batch;
// a rank killed or stopped must make the others exit within the timeout
// with one line naming it, leaving the newest snapshot whole.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/data_parallel_fixture.hpp"
#include "resume/training_process.hpp"
#include "tool_runner.hpp"
#include "xtrain/comm.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"
#include "xtrain/snapshot_files.hpp"

namespace xtrain::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

class GlooTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gloo_available()) GTEST_SKIP() << "this build has no Gloo (libgloo-dev)";
    write_images(source_, 60);
    std::filesystem::create_directories(meeting_);
  }

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
    return "env OMP_NUM_THREADS=1 " + tool_path("xtrain") + " train --solver=" + solver_path +
           " " + flags;
  }

  // Starts `ranks` processes, rank r running command_of_rank(r), each
  // logging to <name>_rank<r>.log.
  void start(const std::string& name, int ranks,
             const std::function<std::string(int)>& command_of_rank) {
    processes_.clear();
    for (int r = 0; r < ranks; ++r) {
      processes_.push_back(
          std::make_unique<BackgroundProcess>(command_of_rank(r), log_path(name, r)));
    }
  }
  std::string log_path(const std::string& name, int rank) const {
    return dir_.file(name + "_rank" + std::to_string(rank) + ".log");
  }
  // Every rank's exit code, in rank order.
  std::vector<int> wait_all() {
    std::vector<int> codes;
    for (auto& process : processes_) codes.push_back(process->wait_exit_code());
    return codes;
  }
  std::string logs(const std::string& name, int ranks) const {
    std::string text;
    for (int r = 0; r < ranks; ++r) {
      text += "--- rank " + std::to_string(r) + ":\n" + read_text(log_path(name, r));
    }
    return text;
  }

  NetParameter weights(const std::string& name, int iteration) {
    NetParameter model;
    read_proto_from_binary_file(
        dir_.file(name) + "_iter_" + std::to_string(iteration) + ".caffemodel", &model);
    return model;
  }

  TempDir dir_{"gloo_training"};
  std::string source_ = dir_.file("images_lmdb");
  std::string meeting_ = dir_.file("meet");  // the rendezvous directory
  std::vector<std::unique_ptr<BackgroundProcess>> processes_;
};

// 2 ranks placed as srun places them, 3 as torchrun does; batch 4 each,
// against one process with batch 8 and 12.
TEST_F(GlooTraining, RanksWithBatchBTrainLikeOneProcessWithBatchNB) {
  constexpr int kIterations = 10;
  for (int ranks : {2, 3}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    const std::string alone_name = "alone" + std::to_string(ranks);
    const ToolResult alone = run_tool(train(solver(alone_name, 4 * ranks, kIterations)));
    ASSERT_EQ(alone.exit_code, 0) << alone.output;
    const std::string name = "ranks" + std::to_string(ranks);
    const std::string solver_path = solver(name, 4, kIterations);
    start(name, ranks, [&](int r) {
      const std::string n = std::to_string(ranks), rank = std::to_string(r);
      const std::string placement =
          ranks == 2 ? "SLURM_JOB_ID=77 SLURM_STEP_ID=0 SLURM_PROCID=" + rank +
                           " SLURM_NTASKS=" + n + " SLURM_LOCALID=" + rank
                     : "TORCHELASTIC_RUN_ID=t1 RANK=" + rank + " WORLD_SIZE=" + n +
                           " LOCAL_RANK=" + rank;
      return "env " + placement + " " + train(solver_path, "--rendezvous=" + meeting_);
    });
    const std::vector<int> codes = wait_all();
    for (int r = 0; r < ranks; ++r) ASSERT_EQ(codes[r], 0) << logs(name, ranks);
    const std::string root_log = read_text(log_path(name, 0));
    EXPECT_CONTAINS(root_log, "Data parallel: " + std::to_string(ranks) + " ranks (gloo");
    EXPECT_CONTAINS(root_log, "Gloo: " + std::to_string(ranks) + " ranks met in '" + meeting_);
    const double difference =
        max_relative_difference(weights(name, kIterations), weights(alone_name, kIterations));
    EXPECT_LE(difference, 1e-4);
    std::printf("%d Gloo ranks: largest per-blob relative difference to one process %.2e\n",
                ranks, difference);
    // The directory is left empty for the next job.
    EXPECT_TRUE(std::filesystem::is_empty(meeting_)) << "entries left in " << meeting_;
  }
  // The comparison can fail: one process with batch 4 ends elsewhere.
  ASSERT_EQ(run_tool(train(solver("half", 4, kIterations))).exit_code, 0);
  EXPECT_GT(max_relative_difference(weights("half", kIterations), weights("alone2", kIterations)),
            1e-3);
}

// A rank killed while the job forms leaves its entries in the directory;
// the next job's rank of that number refuses them, saying what to do,
// instead of meeting a dead address. Once they are deleted, the job runs.
TEST_F(GlooTraining, AnEntryLeftByAJobKilledWhileFormingIsRefused) {
  const std::string solver_path = solver("formed", 4, 2);
  {
    BackgroundProcess lonely(train(solver_path, "--rendezvous=" + meeting_ +
                                                    " --rank=1 --world_size=2"),
                             dir_.file("lonely.log"));
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (std::filesystem::is_empty(meeting_) && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_FALSE(std::filesystem::is_empty(meeting_)) << read_text(dir_.file("lonely.log"));
    lonely.send(SIGKILL);  // waited for by its destructor
  }
  const ToolResult refused =
      run_tool(train(solver_path, "--rendezvous=" + meeting_ +
                                      " --rank=1 --world_size=2 --collective_timeout=5"));
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_CONTAINS(refused.output, "xtrain train: error: the rendezvous directory '" + meeting_ +
                                      "' already holds this rank's entry 'rank_1'");
  EXPECT_CONTAINS(refused.output, "a job that was killed or failed while it formed left it there");
  std::filesystem::remove_all(meeting_);
  std::filesystem::create_directories(meeting_);
  start("formed", 2, [&](int r) {
    return train(solver_path,
                 "--rendezvous=" + meeting_ + " --rank=" + std::to_string(r) + " --world_size=2");
  });
  const std::vector<int> codes = wait_all();
  EXPECT_EQ(codes, std::vector<int>({0, 0})) << logs("formed", 2);
}

class GlooTrainingFaults : public GlooTraining {
 protected:
  static constexpr int kRanks = 3;

  // Starts the 3-rank job with a snapshot every 4 iterations, running until
  // stopped, and returns once rank 0 has displayed iteration 6.
  void start_long_job(const std::string& name, int timeout) {
    solver_ = solver(name, 4, 100000, "snapshot: 4\n");
    start(name, kRanks, [&](int r) {
      return train(solver_, "--rendezvous=" + meeting_ + " --rank=" + std::to_string(r) +
                                " --world_size=3 --collective_timeout=" + std::to_string(timeout));
    });
    ASSERT_TRUE(wait_for_text(log_path(name, 0), "Iteration 6 \\(", 120)) << logs(name, kRanks);
  }

  // Waits for ranks 0 and 1; their exit codes and the seconds they took.
  std::pair<std::vector<int>, double> wait_survivors() {
    const auto start = Clock::now();
    std::vector<int> codes = {processes_[0]->wait_exit_code(), processes_[1]->wait_exit_code()};
    return {codes, std::chrono::duration<double>(Clock::now() - start).count()};
  }

  // The newest snapshot is whole, and the job resumes from it.
  void expect_resumes(const std::string& name) {
    std::vector<std::string> skipped;
    const std::string newest = find_latest_valid_snapshot(dir_.file(name), &skipped);
    ASSERT_FALSE(newest.empty()) << "no intact snapshot of " << dir_.file(name);
    EXPECT_TRUE(skipped.empty()) << skipped.front();
    const std::string resumed = name + "_resumed";
    start(resumed, kRanks, [&](int r) {
      return train(solver_, "--snapshot=auto --max_iter=10 --rendezvous=" + meeting_ +
                                " --rank=" + std::to_string(r) + " --world_size=3");
    });
    const std::vector<int> codes = wait_all();
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(codes[r], 0) << logs(resumed, kRanks);
    EXPECT_CONTAINS(read_text(log_path(resumed, 0)), "--snapshot=auto: resuming from " + newest);
  }

  std::string solver_;
};

// Rank 2 is killed (SIGKILL): its connections close, and ranks 0 and 1 stop
// at once, naming it as gone (not each other, though they leave too).
TEST_F(GlooTrainingFaults, AKilledRankIsNamedAndTheOthersExit) {
  constexpr int kTimeout = 30;
  start_long_job("killed", kTimeout);
  processes_[2]->send(SIGKILL);
  const auto [codes, seconds] = wait_survivors();
  const std::string output = logs("killed", kRanks);
  EXPECT_EQ(codes[0], 1) << output;
  EXPECT_EQ(codes[1], 1) << output;
  // At once: the closed connections say it, no timeout is waited out.
  EXPECT_LT(seconds, kTimeout) << output;
  std::printf("ranks 0 and 1 ended %.1f s after rank 2 was killed\n", seconds);
  const std::string gone = "rank 2 (host " + host_name() + ") is gone: its connections closed";
  EXPECT_CONTAINS(read_text(log_path("killed", 0)), "xtrain train: error: rank 0 of 3: ");
  EXPECT_CONTAINS(read_text(log_path("killed", 0)), gone);
  EXPECT_CONTAINS(read_text(log_path("killed", 1)), gone);
  EXPECT_EQ(output.find("rank 1 (host"), std::string::npos) << output;
  processes_[2]->wait_exit_code();
  expect_resumes("killed");
}

// Rank 2 is stopped (SIGSTOP): alive to the kernel, silent to the others,
// like a node cut off. Ranks 0 and 1 give up after the timeout and name it.
TEST_F(GlooTrainingFaults, AStoppedRankIsNamedAfterTheTimeout) {
  constexpr int kTimeout = 3;
  start_long_job("stopped", kTimeout);
  processes_[2]->send(SIGSTOP);
  const auto [codes, seconds] = wait_survivors();
  processes_[2]->send(SIGKILL);
  const std::string output = logs("stopped", kRanks);
  EXPECT_EQ(codes[0], 1) << output;
  EXPECT_EQ(codes[1], 1) << output;
  // The timeout, asking the others (at most 3 s here), the wait for a
  // closed connection (2 s), and slack for a loaded machine.
  EXPECT_LT(seconds, kTimeout + 3 + 2 + 10) << output;
  std::printf("ranks 0 and 1 ended %.1f s after rank 2 was stopped (--collective_timeout=%d)\n",
              seconds, kTimeout);
  const std::string silent = "rank 2 (host " + host_name() + ") did not answer within 3 s";
  EXPECT_CONTAINS(read_text(log_path("stopped", 0)), silent);
  EXPECT_CONTAINS(read_text(log_path("stopped", 1)), silent);
  processes_[2]->wait_exit_code();
  expect_resumes("stopped");
}

}  // namespace
}  // namespace xtrain::testing

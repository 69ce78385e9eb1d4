// Two trainings with one snapshot_prefix (a job resubmitted while the first
// still runs) must not interleave their snapshots: the second refuses,
// naming the first's host and process; the lock a killed job leaves behind is
// taken over; a lock from another host (a shared file system) is refused
// with how to clear it; a clean end leaves no lock.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "distributed/data_parallel_fixture.hpp"
#include "resume/training_process.hpp"
#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

class TwoJobsOnePrefix : public ::testing::Test {
 protected:
  TwoJobsOnePrefix() {
    write_images(source_, 30);
    const std::string net = dir_.write("net.prototxt", net_text(source_, 4));
    solver_ = dir_.write("solver.prototxt",
                         "net: '" + net +
                             "'\nbase_lr: 0.01\nlr_policy: 'fixed'\nmax_iter: 100000000\n"
                             "display: 1\nsnapshot: 50\nsolver_mode: CPU\nrandom_seed: 3\n"
                             "snapshot_prefix: '" + prefix_ + "'\n");
  }
  std::string train(const std::string& flags = "") const {
    return "env OMP_NUM_THREADS=1 " + tool_path("xtrain") + " train --solver=" + solver_ + " " + flags;
  }
  // The first job, running (it has displayed iteration 2) until killed.
  std::unique_ptr<BackgroundProcess> start_first() {
    auto first = std::make_unique<BackgroundProcess>(train(), dir_.file("first.log"));
    EXPECT_TRUE(wait_for_text(dir_.file("first.log"), "Iteration 2 \\(", 60))
        << read_text(dir_.file("first.log"));
    return first;
  }
  std::string lock() const { return prefix_ + ".lock"; }

  TempDir dir_{"two_jobs"};
  std::string source_ = dir_.file("images_lmdb");
  std::string prefix_ = dir_.file("snapshots/job");
  std::string solver_;
};

TEST_F(TwoJobsOnePrefix, TheSecondRefusesNamingTheFirstsHostAndProcess) {
  auto first = start_first();
  const std::string held = read_text(lock());
  EXPECT_CONTAINS(held, "host " + host_name() + "\n");
  const std::string pid = held.substr(held.find("pid ") + 4, held.find('\n', held.find("pid ")) -
                                                                 held.find("pid ") - 4);
  // The lock names the first job's own process.
  EXPECT_CONTAINS(read_text("/proc/" + pid + "/cmdline"), solver_);
  const ToolResult second = run_tool(train("--snapshot=auto"));
  const std::string line = expect_one_line_error(second, "xtrain train");
  EXPECT_CONTAINS(line, "snapshot_prefix '" + prefix_ + "' is in use by another training: process " +
                            pid + " on host " + host_name());
  EXPECT_CONTAINS(line, "holds '" + lock() + "'");
  // The first job goes on, still holding its lock.
  first->send(SIGTERM);
  EXPECT_EQ(first->wait_exit_code(), 75) << read_text(dir_.file("first.log"));
  EXPECT_FALSE(std::filesystem::exists(lock())) << "a clean end leaves no lock";
}

TEST_F(TwoJobsOnePrefix, TheLockOfAKilledJobIsTakenOver) {
  auto first = start_first();
  first->send(SIGKILL);
  first->wait_exit_code();
  ASSERT_TRUE(std::filesystem::exists(lock()));
  const std::string held = read_text(lock());
  const ToolResult second = run_tool(train("--max_iter=3"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_CONTAINS(second.output, "the snapshot lock '" + lock() + "' was left by process");
  EXPECT_CONTAINS(second.output, "which has ended; taking it over");
  EXPECT_CONTAINS(second.output, held.substr(held.find("pid ") + 4, 3));
  EXPECT_FALSE(std::filesystem::exists(lock()));
}

// On a shared file system the lock may come from another node, where this
// one cannot see whether the process still runs.
TEST_F(TwoJobsOnePrefix, ALockFromAnotherHostIsRefusedSayingHowToClearIt) {
  dir_.write("snapshots/job.lock", "host node17.cluster\npid 4242\nstarted 2026-12-07T10:00:00Z\n");
  const ToolResult second = run_tool(train("--max_iter=3"));
  const std::string line = expect_one_line_error(second, "xtrain train");
  EXPECT_CONTAINS(line, "was locked by process 4242 on host node17.cluster, started "
                        "2026-12-07T10:00:00Z");
  EXPECT_CONTAINS(line, "cannot tell whether that training still runs");
  EXPECT_CONTAINS(line, "delete '" + lock() + "' and start again");
  // Cleared as the message says, the job runs.
  std::filesystem::remove(lock());
  EXPECT_EQ(run_tool(train("--max_iter=3")).exit_code, 0);
}

}  // namespace
}  // namespace xtrain::testing

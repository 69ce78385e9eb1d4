// Training over a network without MPI: one `xtrain train --rendezvous=DIR`
// per namespaced node (scripts/netns_cluster.sh), the nodes meeting in a
// directory they share (network namespaces share the file system, as nodes
// share NFS) and summing over Gloo's TCP transport between their addresses.
// LeNet on 2 and 3 nodes must train like one process; a node cut off or a
// rank killed must end every rank within --collective_timeout plus a margin,
// each naming the lost rank and its host, and leave the newest snapshot
// whole for the resume.
//
// Needs root (network namespaces); skipped with the reason elsewhere.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "distributed/netns_cluster_fixture.hpp"
#include "xtrain/snapshot_files.hpp"

namespace xtrain::testing {
namespace {

// The process id of the xtrain rank whose command line holds `marker` and
// `--rank=R` (not the shell or `ip netns exec` around it), or -1.
pid_t find_gloo_rank(const std::string& marker, int rank) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  const std::string wanted = std::string(1, '\0') + "--rank=" + std::to_string(rank) + '\0';
  while (dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/cmdline", std::ios::binary);
    const std::string command(std::istreambuf_iterator<char>(in), {});
    if (command.find(marker) == std::string::npos || command.find(wanted) == std::string::npos ||
        command.find("/xtrain") == std::string::npos || command.rfind("ip", 0) == 0 ||
        command.rfind("sh", 0) == 0 || command.rfind("bash", 0) == 0 ||
        command.rfind("unshare", 0) == 0 ||
        command.rfind("timeout", 0) == 0 || command.rfind("env", 0) == 0) {
      continue;
    }
    found = static_cast<pid_t>(std::stol(name));
    break;
  }
  ::closedir(proc);
  return found;
}

class NetnsClusterGloo : public NetnsCluster {
 protected:
  bool uses_mpi() const override { return false; }

  void SetUp() override {
    NetnsCluster::SetUp();
    if (IsSkipped()) return;
    std::filesystem::create_directories(meeting_);
  }

  // Starts one rank per node, rank i on node i, each under `timeout` and
  // logging to <name>_rank<i>.log.
  void start(const std::string& name, int nodes, const std::string& train_arguments,
             int limit_seconds = 120) {
    ranks_.clear();
    for (int node = 0; node < nodes; ++node) {
      ranks_.push_back(std::make_unique<BackgroundProcess>(
          "timeout " + std::to_string(limit_seconds) + " " +
              cluster("exec " + std::to_string(node) + " env OMP_NUM_THREADS=1 " +
                      tool_path("xtrain") + " train " + train_arguments + " --rendezvous=" +
                      meeting_ + " --rank=" + std::to_string(node) +
                      " --world_size=" + std::to_string(nodes)),
          log_path(name, node)));
    }
  }
  std::string log_path(const std::string& name, int rank) const {
    return dir_.file(name + "_rank" + std::to_string(rank) + ".log");
  }
  std::vector<int> wait_all() {
    std::vector<int> codes;
    for (auto& rank : ranks_) codes.push_back(rank->wait_exit_code());
    return codes;
  }
  std::string logs(const std::string& name, int nodes) const {
    std::string text;
    for (int r = 0; r < nodes; ++r) {
      text += "--- rank " + std::to_string(r) + ":\n" + read_text(log_path(name, r));
    }
    return text;
  }

  std::string meeting_ = dir_.file("meet");
  std::vector<std::unique_ptr<BackgroundProcess>> ranks_;
};

TEST_F(NetnsClusterGloo, TwoAndThreeNodesTrainLikeOneProcess) {
  constexpr int kIterations = 10;
  const ToolResult alone =
      run_tool("OMP_NUM_THREADS=1 " + tool_path("xtrain") + " train --solver=" +
               solver("alone", 24, kIterations));
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  for (int nodes : {2, 3}) {
    SCOPED_TRACE(std::to_string(nodes) + " nodes");
    up(nodes);
    const std::string name = "gloo" + std::to_string(nodes);
    start(name, nodes, "--solver=" + solver(name, 24 / nodes, kIterations));
    const std::vector<int> codes = wait_all();
    for (int r = 0; r < nodes; ++r) ASSERT_EQ(codes[r], 0) << logs(name, nodes);
    const std::string root = read_text(log_path(name, 0));
    EXPECT_CONTAINS(root, "Data parallel: " + std::to_string(nodes) + " ranks (gloo");
    // Node 0 listens on its own address, not loopback.
    EXPECT_CONTAINS(root, "rank 0 listens on 10.77.0.1 (eth0");
    const double difference =
        max_relative_difference(weights(name, kIterations), weights("alone", kIterations));
    EXPECT_LE(difference, 1e-4);
    std::printf("%d nodes over Gloo: largest per-blob relative difference to one process %.2e\n",
                nodes, difference);
  }
  ASSERT_EQ(run_tool("OMP_NUM_THREADS=1 " + tool_path("xtrain") + " train --solver=" +
                     solver("small", 8, kIterations))
                .exit_code,
            0);
  EXPECT_GT(max_relative_difference(weights("small", kIterations), weights("alone", kIterations)),
            1e-3);
}

class NetnsClusterGlooFaults : public NetnsClusterGloo {
 protected:
  static constexpr int kTimeout = 4;  // --collective_timeout

  // 3 nodes x batch 8, a snapshot every 4 iterations, until stopped; returns
  // once rank 0 has displayed iteration 9.
  void start_faulty() {
    faulty_ = solver("faulty", 8, 100000, "snapshot: 4\n");
    start("faulty", 3, "--solver=" + faulty_ + " --collective_timeout=" + std::to_string(kTimeout));
    ASSERT_TRUE(wait_for_text(log_path("faulty", 0), "Iteration 9 \\(", 90)) << logs("faulty", 3);
  }

  // Every rank ends; the seconds it took from now.
  double wait_for_every_rank() {
    const auto start = Clock::now();
    codes_ = wait_all();
    return seconds_since(start);
  }

  // The newest snapshot is whole, and the job resumes from it on 3 nodes.
  void expect_resumes() {
    std::vector<std::string> skipped;
    const std::string newest = find_latest_valid_snapshot(dir_.file("faulty"), &skipped);
    ASSERT_FALSE(newest.empty()) << "no intact snapshot of " << dir_.file("faulty");
    EXPECT_TRUE(skipped.empty()) << skipped.front();
    up(3);
    start("resumed", 3, "--solver=" + faulty_ + " --snapshot=auto --max_iter=14");
    const std::vector<int> codes = wait_all();
    for (int r = 0; r < 3; ++r) EXPECT_EQ(codes[r], 0) << logs("resumed", 3);
    EXPECT_CONTAINS(read_text(log_path("resumed", 0)), "--snapshot=auto: resuming from " + newest);
  }

  std::string faulty_;
  std::vector<int> codes_;
};

// Node 2's switch port goes down: silence, no error anywhere. Ranks 0 and 1
// give up after the timeout naming rank 2 and its host; rank 2 gives up on
// its side of the cut, naming the two it cannot reach.
TEST_F(NetnsClusterGlooFaults, ALinkCutEndsEveryRankNamingTheLostOne) {
  up(3);
  start_faulty();
  ASSERT_EQ(run_tool(cluster("link 2 down")).exit_code, 0);
  const double seconds = wait_for_every_rank();
  const std::string output = logs("faulty", 3);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(codes_[r], 1) << "rank " << r << ":\n" << output;
  // The timeout, asking the others (at most 4 s), a wait for a closed
  // connection (2 s), and slack for a loaded machine.
  EXPECT_LT(seconds, kTimeout + 4 + 2 + 10) << output;
  std::printf("every rank ended %.1f s after the cut (--collective_timeout=%d)\n", seconds,
              kTimeout);
  const std::string lost = "rank 2 (host " + name_ + "-n2) did not answer within 4 s";
  EXPECT_CONTAINS(read_text(log_path("faulty", 0)), "xtrain train: error: rank 0 of 3: ");
  EXPECT_CONTAINS(read_text(log_path("faulty", 0)), lost);
  EXPECT_CONTAINS(read_text(log_path("faulty", 1)), lost);
  EXPECT_CONTAINS(read_text(log_path("faulty", 2)),
                  "ranks 0 (host " + name_ + "-n0) and 1 (host " + name_ + "-n1) did not answer");
  expect_resumes();
}

// Node 2's rank is killed: its connections close, and ranks 0 and 1 end at
// once naming it.
TEST_F(NetnsClusterGlooFaults, AKilledRankEndsTheOthersNamingItsHost) {
  up(3);
  start_faulty();
  const pid_t rank2 = find_gloo_rank(faulty_, 2);
  ASSERT_GT(rank2, 0);
  ::kill(rank2, SIGKILL);
  const double seconds = wait_for_every_rank();
  const std::string output = logs("faulty", 3);
  EXPECT_EQ(codes_[0], 1) << output;
  EXPECT_EQ(codes_[1], 1) << output;
  EXPECT_LT(seconds, kTimeout + 10) << output;
  std::printf("ranks 0 and 1 ended %.1f s after rank 2 was killed\n", seconds);
  const std::string gone = "rank 2 (host " + name_ + "-n2) is gone: its connections closed";
  EXPECT_CONTAINS(read_text(log_path("faulty", 0)), gone);
  EXPECT_CONTAINS(read_text(log_path("faulty", 1)), gone);
  expect_resumes();
}

}  // namespace
}  // namespace xtrain::testing

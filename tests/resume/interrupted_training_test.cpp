// Training that is interrupted the ways jobs die: a scheduler's signal, a
// SIGKILL at any instant, a full disk, a time budget. Through the CLI, as a
// job script runs it.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <regex>
#include <string>

#include "resume/training_process.hpp"
#include "test_net_text.hpp"
#include "tool_runner.hpp"
#include "xtrain/snapshot_files.hpp"

namespace fs = std::filesystem;

namespace xtrain::testing {
namespace {

// Random input from DummyData (so resuming must restore its stream), a
// hidden layer of `hidden` units, three classes.
std::string net_text(int hidden) {
  return R"(
    name: 'interrupted'
)" + testing::random_data_and_labels({4, 1, 8, 8}, "type: 'constant' value: 1") +
         R"(
    layer { name: 'hidden' type: 'InnerProduct' bottom: 'data' top: 'hidden'
            inner_product_param { num_output: )" +
         std::to_string(hidden) + R"( weight_filler { type: 'gaussian' std: 0.05 } } }
    layer { name: 'relu' type: 'ReLU' bottom: 'hidden' top: 'hidden' }
    layer { name: 'out' type: 'InnerProduct' bottom: 'hidden' top: 'out'
            inner_product_param { num_output: 3 weight_filler { type: 'xavier' } } }
    layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'out' bottom: 'label' top: 'loss' }
  )";
}

class InterruptedTraining : public ::testing::Test {
 protected:
  // A solver file for `net_file` with snapshots under `prefix`.
  std::string write_solver(const std::string& name, const std::string& prefix,
                           const std::string& extra, int hidden = 16) {
    const std::string net = dir_.write(name + "_net.prototxt", net_text(hidden));
    return dir_.write(name + "_solver.prototxt",
                      "net: '" + net + "' base_lr: 0.01 momentum: 0.9 lr_policy: 'fixed' " +
                          "random_seed: 7 solver_mode: CPU snapshot_prefix: '" + prefix + "' " +
                          extra);
  }
  std::string xtrain_train(const std::string& solver, const std::string& flags) const {
    return tool_path("xtrain") + " train --solver=" + solver + " " + flags;
  }
  static int iteration_of(const std::string& state_path) {
    std::smatch match;
    EXPECT_TRUE(std::regex_search(state_path, match, std::regex(R"(_iter_(\d+)\.solverstate)")))
        << state_path;
    return match.empty() ? -1 : std::stoi(match[1].str());
  }
  TempDir dir_{"interrupted"};
};

class SchedulerSignal : public InterruptedTraining, public ::testing::WithParamInterface<int> {};

TEST_P(SchedulerSignal, SnapshotsExitsWithTheResubmitCodeAndTheResubmissionContinuesExactly) {
  const int signal_number = GetParam();
  const std::string prefix = dir_.file("signalled/run");
  const std::string solver = write_solver("signalled", prefix, "display: 10");
  const std::string log = dir_.file("signalled.log");
  int stopped_at = -1;
  {
    BackgroundProcess training(xtrain_train(solver, "--max_iter=100000000"), log);
    ASSERT_TRUE(training.started());
    ASSERT_TRUE(wait_for_text(log, R"(Iteration 30 \()", 60)) << read_text(log);
    training.send(signal_number);
    EXPECT_EQ(training.wait_exit_code(), 75) << read_text(log);
  }
  const std::string text = read_text(log);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(text, match, std::regex(R"(Stopped early at iteration (\d+))")))
      << text;
  stopped_at = std::stoi(match[1].str());
  const std::string state = prefix + "_iter_" + std::to_string(stopped_at) + ".solverstate";
  EXPECT_EQ(snapshot_problem(state), "");

  // The job script runs again, unchanged but for --snapshot=auto.
  const int finish = stopped_at + 20;
  const ToolResult resumed =
      run_tool(xtrain_train(solver, "--snapshot=auto --max_iter=" + std::to_string(finish)));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("--snapshot=auto: resuming from " + state), std::string::npos)
      << resumed.output;

  const std::string straight_prefix = dir_.file("straight/run");
  const ToolResult straight =
      run_tool(xtrain_train(write_solver("straight", straight_prefix, "display: 10"),
                            "--max_iter=" + std::to_string(finish)));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  const std::string suffix = "_iter_" + std::to_string(finish) + ".caffemodel";
  const std::string resumed_weights = read_text(prefix + suffix);
  ASSERT_FALSE(resumed_weights.empty());
  EXPECT_TRUE(resumed_weights == read_text(straight_prefix + suffix))
      << "weights after the interrupted and resubmitted run differ from a straight run's";
}

INSTANTIATE_TEST_SUITE_P(Signals, SchedulerSignal, ::testing::Values(SIGTERM, SIGUSR1, SIGINT),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(sigabbrev_np(param_info.param));
                         });

TEST_F(InterruptedTraining, KilledAtRandomInstantsAlwaysResumesFromAnIntactSnapshot) {
  constexpr int kInterval = 3;
  const std::string prefix = dir_.file("killed/run");
  const std::string solver = write_solver(
      "killed", prefix, "display: 1 snapshot: " + std::to_string(kInterval) + " snapshot_keep: 2",
      /*hidden=*/256);
  std::mt19937 random(20261122);
  std::uniform_int_distribution<int> delay_ms(20, 400);
  int previous_latest = -1;
  int snapshots_seen = 0;
  // 14 rounds at random instants; on a loaded machine, where start-up eats
  // most of a short delay, more rounds with longer delays until the runs have
  // made enough progress for the test to say something.
  std::uniform_int_distribution<int> longer_delay_ms(400, 1500);
  for (int round = 0; round < 14 || (snapshots_seen < 3 && round < 40); ++round) {
    const int delay = round < 14 ? delay_ms(random) : longer_delay_ms(random);
    SCOPED_TRACE("round " + std::to_string(round) + ", killed after " + std::to_string(delay) +
                 " ms");
    const std::string log = dir_.file("killed_" + std::to_string(round) + ".log");
    {
      BackgroundProcess training(xtrain_train(solver, "--snapshot=auto --max_iter=100000000"), log);
      ASSERT_TRUE(training.started());
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
      training.send(SIGKILL);
      EXPECT_EQ(training.wait_exit_code(), 128 + SIGKILL);
    }
    const std::string text = read_text(log);
    // (A process killed very early may not have chosen yet.)
    if (previous_latest >= 0 && text.find("--snapshot=auto: ") != std::string::npos) {
      EXPECT_NE(text.find("resuming from " + prefix + "_iter_" + std::to_string(previous_latest) +
                          ".solverstate"),
                std::string::npos)
          << "the resubmission did not resume from the newest snapshot\n"
          << text;
    }
    std::vector<std::string> skipped;
    const std::string latest = find_latest_valid_snapshot(prefix, &skipped);
    const int displayed = last_displayed_iteration(text);
    // "Iteration k" is printed after the snapshots up to k were written.
    const int must_have = displayed >= 0 ? displayed / kInterval * kInterval : 0;
    if (must_have > 0 || previous_latest > 0) {
      ASSERT_FALSE(latest.empty()) << text;
      const int latest_iter = iteration_of(latest);
      EXPECT_GE(latest_iter, must_have) << "lost work beyond the last snapshot interval";
      EXPECT_GE(latest_iter, previous_latest) << "a newer snapshot disappeared";
      EXPECT_EQ(snapshot_problem(latest), "");
      if (latest_iter != previous_latest) ++snapshots_seen;
      previous_latest = latest_iter;
    }
  }
  EXPECT_GE(snapshots_seen, 3) << "training hardly progressed; the test says little";
  const ToolResult finish = run_tool(xtrain_train(
      solver, "--snapshot=auto --max_iter=" + std::to_string(previous_latest + kInterval)));
  EXPECT_EQ(finish.exit_code, 0) << finish.output;
}

TEST_F(InterruptedTraining, AFullDiskKeepsTrainingAndThePreviousSnapshot) {
  if (run_tool("unshare -rm true").exit_code != 0) {
    GTEST_SKIP() << "cannot mount a small tmpfs here (unshare -rm is not permitted)";
  }
  // 64 x 1000 weights: a snapshot is ~0.5 MB (weights + momentum history);
  // the second one does not fit next to the first on a 700 KB disk.
  const fs::path disk = dir_.file("disk");
  fs::create_directories(disk);
  const std::string copy = dir_.file("copy");
  fs::create_directories(copy);
  const std::string solver =
      write_solver("full", (disk / "run").string(), "display: 1 snapshot: 2 max_iter: 6", 1000);
  const std::string log = dir_.file("full.log");
  const std::string script = "mount -t tmpfs -o size=700k tmpfs '" + disk.string() + "' && " +
                             xtrain_train(solver, "") + " > '" + log + "' 2>&1; echo $? > '" +
                             dir_.file("rc") + "'; cp -a '" + disk.string() + "/.' '" + copy + "'";
  const ToolResult contained = run_tool("unshare -rm sh -c \"" + script + "\"");
  ASSERT_EQ(contained.exit_code, 0) << contained.output;
  const std::string text = read_text(log);
  EXPECT_EQ(read_text(dir_.file("rc")), "0\n") << text;
  EXPECT_NE(text.find("Snapshot at iteration 4 failed; training continues"), std::string::npos)
      << text;
  EXPECT_NE(text.find("No space left on device"), std::string::npos) << text;
  EXPECT_NE(text.find("Optimization Done"), std::string::npos) << text;

  EXPECT_EQ(snapshot_problem(copy + "/run_iter_2.solverstate"), "");
  for (const auto& entry : fs::directory_iterator(copy)) {
    const std::string name = entry.path().filename().string();
    // The training's metrics and report live beside the snapshots too.
    EXPECT_TRUE(name == "run_iter_2.solverstate" || name == "run_iter_2.caffemodel" ||
                name == "run_metrics.jsonl" || name == "run_report.html")
        << "left behind on the full disk: " << name;
  }
}

TEST_F(InterruptedTraining, TheTimeBudgetStopsWithASnapshotInTime) {
  const std::string prefix = dir_.file("budget/run");
  const std::string solver = write_solver("budget", prefix, "display: 100");
  const auto start = std::chrono::steady_clock::now();
  const ToolResult run = run_tool(xtrain_train(solver, "--max_iter=100000000 --max_seconds=3"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(run.exit_code, 75) << run.output;
  EXPECT_LT(seconds, 3.0 + 1.0) << "overran the budget";
  std::smatch match;
  ASSERT_TRUE(std::regex_search(run.output, match,
                                std::regex(R"(Stopping at iteration (\d+) to snapshot inside)")))
      << run.output;
  EXPECT_EQ(snapshot_problem(prefix + "_iter_" + match[1].str() + ".solverstate"), "");
}

TEST_F(InterruptedTraining, SnapshotKeepLeavesTheNewest) {
  const std::string prefix = dir_.file("keep/run");
  const ToolResult run = run_tool(
      xtrain_train(write_solver("keep", prefix, "snapshot: 1 max_iter: 6"), "--snapshot_keep=2"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::vector<int> left;
  for (const SnapshotOnDisk& snapshot : list_snapshots(prefix)) left.push_back(snapshot.iter);
  EXPECT_EQ(left, (std::vector<int>{6, 5}));
  EXPECT_FALSE(fs::exists(prefix + "_iter_4.caffemodel"));
}

TEST_F(InterruptedTraining, SnapshotAutoSkipsADamagedSnapshotAndSaysSo) {
  const std::string prefix = dir_.file("damaged/run");
  const std::string solver = write_solver("damaged", prefix, "snapshot: 2 max_iter: 4");
  ASSERT_EQ(run_tool(xtrain_train(solver, "")).exit_code, 0);
  // Cut the newest weights short, as a copy interrupted mid-way would.
  fs::resize_file(prefix + "_iter_4.caffemodel", fs::file_size(prefix + "_iter_4.caffemodel") / 2);
  const ToolResult resumed = run_tool(xtrain_train(solver, "--snapshot=auto --max_iter=5"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("--snapshot=auto skips " + prefix + "_iter_4.solverstate"),
            std::string::npos)
      << resumed.output;
  EXPECT_NE(resumed.output.find("resuming from " + prefix + "_iter_2.solverstate"),
            std::string::npos)
      << resumed.output;
}

TEST_F(InterruptedTraining, SnapshotAutoWithoutSnapshotsStartsFresh) {
  const std::string solver = write_solver("fresh", dir_.file("fresh/run"), "max_iter: 2");
  const ToolResult run = run_tool(xtrain_train(solver, "--snapshot=auto"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("no usable snapshot"), std::string::npos) << run.output;
}

TEST_F(InterruptedTraining, ASnapshotFlagOfTheWrongKindSaysWhatItExpected) {
  const std::string prefix = dir_.file("kinds/run");
  const std::string solver = write_solver("kinds", prefix, "max_iter: 2");
  ASSERT_EQ(run_tool(xtrain_train(solver, "")).exit_code, 0);
  const std::string text_file = dir_.write("net.prototxt", net_text(4));
  const std::string empty = dir_.write("empty.solverstate", "");
  for (const auto& [given, expected] : std::vector<std::pair<std::string, std::string>>{
           {prefix + "_iter_2.caffemodel", "it is a .caffemodel"},
           {text_file, "it is a text file"},
           {empty, "it is empty"},
           {dir_.file("missing.solverstate"), "No such file or directory"},
           {"/dev/null", "is a device, not a file"}}) {
    const ToolResult run = run_tool(xtrain_train(solver, "--snapshot=" + given));
    EXPECT_EQ(run.exit_code, 1) << run.output;
    const std::string line = last_line(run.output);
    EXPECT_EQ(line.rfind("xtrain train: error: ", 0), 0u) << line;
    EXPECT_NE(line.find(given), std::string::npos) << line;
    EXPECT_NE(line.find(expected), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace xtrain::testing

// The training events (xtrain/training_observer.hpp): which a solve() sends,
// in which order, with which figures; step() alone; and the time budget as
// an observer of tests and snapshots.
#include "xtrain/training_observer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "solver_test_net.hpp"
#include "solvers/time_budget.hpp"
#include "tool_runner.hpp"
#include "xtrain/lr_policy.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

// Writes each event as a word: "start@0", "display@2", "final@6", "test@3",
// "snapshot@3", "end@6", and keeps the events themselves.
class EventLog : public TrainingObserver {
 public:
  void on_start(const TrainingStart& event) override {
    words.push_back("start@" + std::to_string(event.iteration));
    start = event;
  }
  void on_display(const TrainingDisplay& event) override {
    words.push_back((event.final_pass ? "final@" : "display@") + std::to_string(event.iteration));
    displays.push_back(event);
  }
  void on_test(const TestDone& event) override {
    words.push_back("test@" + std::to_string(event.iteration));
    tests.push_back(event);
  }
  void on_snapshot(const SnapshotWritten& event) override {
    words.push_back("snapshot@" + std::to_string(event.iteration));
    snapshots.push_back(event);
  }
  void on_end(const TrainingEnd& event) override {
    words.push_back("end@" + std::to_string(event.iteration));
    end = event;
  }

  std::vector<std::string> words;
  TrainingStart start;
  std::vector<TrainingDisplay> displays;
  std::vector<TestDone> tests;
  std::vector<SnapshotWritten> snapshots;
  TrainingEnd end;
};

TEST(TrainingObserver, SolveSendsEveryEventInTheLoopsOrder) {
  TempDir dir("observer_order");
  const SolverParameter param = testing::eventful_solver(dir.file("observed"));
  auto solver = create_solver(param, testing::quiet_solver_options());
  auto log = std::make_shared<EventLog>();
  solver->add_observer(log);
  solver->solve();
  // A test comes before the iteration's forward pass (and so its display);
  // a snapshot after its update; the final pass after the last snapshot.
  EXPECT_EQ(log->words, (std::vector<std::string>{"start@0", "test@0", "display@0", "display@2",
                                                  "snapshot@3", "test@3", "display@4", "snapshot@6",
                                                  "final@6", "test@6", "end@6"}));
  EXPECT_EQ(log->start.max_iter, 6);
  EXPECT_FALSE(log->start.resumed);
  EXPECT_EQ(log->start.net_name, solver->net().name());
  EXPECT_EQ(log->start.snapshot_prefix, dir.file("observed"));
  EXPECT_FALSE(log->end.stopped_early);

  // Displays carry the rate of their update, the outputs and the loss.
  ASSERT_EQ(log->displays.size(), 4u);
  for (const TrainingDisplay& display : log->displays) {
    ASSERT_EQ(display.outputs.size(), 1u);
    EXPECT_EQ(display.outputs[0].name, "loss");
    EXPECT_EQ(display.outputs[0].loss_weight, 1.0f);
    EXPECT_EQ(display.display_interval, 2);
    if (display.final_pass) continue;
    int step = 0;
    EXPECT_FLOAT_EQ(static_cast<float>(display.learning_rate),
                    learning_rate(param, display.iteration, &step));
  }
  EXPECT_LT(log->displays[0].images_per_second, 0);  // nothing timed yet
  EXPECT_GT(log->displays[1].images_per_second, 0);
  EXPECT_FLOAT_EQ(log->displays.back().smoothed_loss, solver->smoothed_loss());

  // Tests carry the means the solver keeps, and how long they took.
  ASSERT_EQ(log->tests.size(), 3u);
  const TestDone& last = log->tests.back();
  ASSERT_EQ(last.outputs.size(), solver->last_test_results()[0].size());
  EXPECT_EQ(last.outputs[0].value, solver->last_test_results()[0][0].second);
  EXPECT_GE(last.test_seconds, 0.0);
  EXPECT_GE(last.seconds, log->tests.front().seconds);

  // Snapshots name both files, which exist.
  ASSERT_EQ(log->snapshots.size(), 2u);
  EXPECT_EQ(log->snapshots[1].paths,
            (std::vector<std::string>{dir.file("observed_iter_6.caffemodel"),
                                      dir.file("observed_iter_6.solverstate")}));
}

TEST(TrainingObserver, AResumedSolveSaysSoAndStepAloneSendsNoStartOrEnd) {
  TempDir dir("observer_resume");
  SolverParameter param = testing::eventful_solver(dir.file("observed"));
  create_solver(param, testing::quiet_solver_options())->solve();

  auto fresh = create_solver(param, testing::quiet_solver_options());
  auto log = std::make_shared<EventLog>();
  fresh->add_observer(log);
  param.set_max_iter(8);
  auto longer = create_solver(param, testing::quiet_solver_options());
  auto longer_log = std::make_shared<EventLog>();
  longer->add_observer(longer_log);
  longer->solve(dir.file("observed_iter_6.solverstate"));
  EXPECT_TRUE(longer_log->start.resumed);
  EXPECT_EQ(longer_log->start.iteration, 6);
  EXPECT_GT(longer_log->start.seconds, 0.0);  // the earlier session's time
  EXPECT_EQ(longer_log->words.back(), "end@8");

  fresh->step(2);
  EXPECT_EQ(log->words, (std::vector<std::string>{"test@0", "display@0"}));
}

TEST(TrainingObserver, AStopRequestEndsWithStoppedEarly) {
  TempDir dir("observer_stop");
  auto solver = create_solver(testing::eventful_solver(dir.file("observed")),
                              testing::quiet_solver_options());
  auto log = std::make_shared<EventLog>();
  solver->add_observer(log);
  int polls = 0;
  solver->set_action_request_function(
      [&polls] { return ++polls == 2 ? Solver::Action::kStop : Solver::Action::kNone; });
  solver->solve();
  EXPECT_TRUE(log->end.stopped_early);
  EXPECT_LT(log->end.iteration, 6);
}

// The budget counts the tests of one iteration together and the last
// snapshot's time; before any snapshot it guesses from the bytes.
TEST(TimeBudget, WatchesTestsAndSnapshots) {
  const auto now = std::chrono::steady_clock::now();
  TimeBudget none(0, now - std::chrono::hours(100), 0);
  EXPECT_FALSE(none.nearly_spent(1e6, true));

  // 10 s into a 20 s budget; a 1 MB snapshot is guessed at 0.5 + 0.06 s.
  TimeBudget budget(20, now - std::chrono::seconds(10), 1000000);
  EXPECT_FALSE(budget.nearly_spent(1.0, false));  // 10 + 1.5 + 0.84 + 1 < 20
  EXPECT_TRUE(budget.nearly_spent(6.0, false));   // 10 + 9 + 0.84 + 1 > 20
  SnapshotWritten slow_snapshot;
  slow_snapshot.write_seconds = 6;
  budget.on_snapshot(slow_snapshot);
  EXPECT_TRUE(budget.nearly_spent(1.0, false));  // 10 + 1.5 + 9 + 1 > 20
  SnapshotWritten fast_snapshot;
  budget.on_snapshot(fast_snapshot);
  TestDone first_net;
  first_net.iteration = 100;
  first_net.test_seconds = 4;
  TestDone second_net = first_net;
  second_net.test_net = 1;
  budget.on_test(first_net);
  EXPECT_FALSE(budget.nearly_spent(1.0, true));  // 10 + 1.5 + 4 + 0 + 1 < 20
  budget.on_test(second_net);
  budget.on_test(second_net);
  EXPECT_TRUE(budget.nearly_spent(1.0, true));    // tests of iteration 100: 12 s
  EXPECT_FALSE(budget.nearly_spent(1.0, false));  // no test comes next
}

}  // namespace
}  // namespace xtrain

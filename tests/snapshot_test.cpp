// Snapshots and resuming: Caffe's file names and contents, resuming gives
// the same weights as an uninterrupted run, and restore() refuses files that
// are not a solver state of this net with a message that says why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "solver_test_net.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/proto_io.hpp"
#include "xtrain/snapshot_files.hpp"
#include "xtrain/solver.hpp"

namespace fs = std::filesystem;

namespace xtrain {
namespace {

using namespace testing;

// A fresh directory per test, removed afterwards.
class Snapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("xtrain_snapshot_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The regression net with momentum, decay and a multistep schedule, so a
  // resumed run must restore history, iteration and current_step to agree.
  SolverParameter solver_param(const std::string& extra = "") const {
    SolverParameter param = testing::solver_param(
        linear_regression_net(1, 2, 2, true,
                              "blobs { shape { dim: 2 dim: 2 } data: 0.5 data: -0.3 data: 0.2 "
                              "data: 0.4 }\nblobs { shape { dim: 2 } data: 0.1 data: -0.2 }"),
        "base_lr: 0.1 momentum: 0.9 weight_decay: 0.01 lr_policy: 'multistep' gamma: 0.5 "
        "stepvalue: 2 stepvalue: 6 max_iter: 8 snapshot_after_train: true");
    param.set_snapshot_prefix(path("lin"));
    SolverParameter overrides;
    read_proto_from_text_string(extra, &overrides);
    param.MergeFrom(overrides);
    return param;
  }

  std::unique_ptr<Solver> make(const SolverParameter& param) const {
    return create_solver(param, quiet_solver_options());
  }

  static std::vector<float> weights(const Solver& solver) {
    std::vector<float> all;
    for (const Blob* blob : solver.net().learnable_params()) {
      all.insert(all.end(), blob->cpu_data(), blob->cpu_data() + blob->count());
    }
    return all;
  }

  static std::string restore_error(Solver& solver, const std::string& file) {
    try {
      solver.restore(file);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  }

  fs::path dir_;
};

TEST_F(Snapshot, FilesHaveCaffesNamesAndContents) {
  auto solver = make(solver_param("snapshot: 2 max_iter: 4"));
  solver->solve();
  for (int iter : {2, 4}) {
    EXPECT_TRUE(fs::exists(path("lin_iter_" + std::to_string(iter) + ".caffemodel"))) << iter;
    EXPECT_TRUE(fs::exists(path("lin_iter_" + std::to_string(iter) + ".solverstate"))) << iter;
  }
  // Only the four snapshot files: no probe or temporary files left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 4);
  EXPECT_EQ(
      solver->last_snapshot_paths(),
      (std::vector<std::string>{path("lin_iter_4.caffemodel"), path("lin_iter_4.solverstate")}));

  SolverState state;
  read_proto_from_binary_file(path("lin_iter_4.solverstate"), &state);
  EXPECT_EQ(state.iter(), 4);
  EXPECT_EQ(state.learned_net(), path("lin_iter_4.caffemodel"));
  EXPECT_EQ(state.current_step(), 1);  // passed stepvalue 2, not 6
  ASSERT_EQ(state.history_size(), 2);
  EXPECT_EQ(blob_proto_shape(state.history(0)), (std::vector<int>{2, 2}));
  EXPECT_EQ(blob_proto_shape(state.history(1)), (std::vector<int>{2}));

  NetParameter model;
  read_proto_from_binary_file(path("lin_iter_4.caffemodel"), &model);
  EXPECT_EQ(model.name(), "linear_regression");
  ASSERT_EQ(model.layer_size(), 3);
  const LayerParameter& linear = model.layer(1);
  EXPECT_EQ(linear.name(), "linear");
  ASSERT_EQ(linear.blobs_size(), 2);
  const Blob& trained = *solver->net().learnable_params()[0];
  ASSERT_EQ(linear.blobs(0).data_size(), 4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(linear.blobs(0).data(j), trained.cpu_data()[j]);
  EXPECT_EQ(linear.blobs(0).diff_size(), 0);  // snapshot_diff is off
}

TEST_F(Snapshot, SnapshotDiffAlsoSavesGradients) {
  auto solver = make(solver_param("snapshot_diff: true"));
  solver->step(1);
  solver->snapshot();
  NetParameter model;
  read_proto_from_binary_file(path("lin_iter_1.caffemodel"), &model);
  EXPECT_EQ(model.layer(1).blobs(0).diff_size(), 4);
}

TEST_F(Snapshot, ResumingGivesTheSameWeightsAsAStraightRun) {
  auto straight = make(solver_param());
  straight->solve();
  ASSERT_EQ(straight->iter(), 8);

  // Stop at 4 (a multiple of the 4 data rows, so the fresh data layer of the
  // resumed run sees the rows the straight run would).
  auto first_half = make(solver_param("max_iter: 4"));
  first_half->solve();
  ASSERT_TRUE(fs::exists(path("lin_iter_4.solverstate")));

  auto resumed = make(solver_param());
  resumed->restore(path("lin_iter_4.solverstate"));
  EXPECT_EQ(resumed->iter(), 4);
  EXPECT_EQ(resumed->current_step(), 1);
  EXPECT_EQ(weights(*resumed), weights(*first_half));
  resumed->solve();  // continues to max_iter 8
  EXPECT_EQ(resumed->iter(), 8);
  EXPECT_EQ(weights(*resumed), weights(*straight));

  // solve(resume_file) does the same.
  auto resumed_by_solve = make(solver_param());
  resumed_by_solve->solve(path("lin_iter_4.solverstate"));
  EXPECT_EQ(weights(*resumed_by_solve), weights(*straight));
}

TEST_F(Snapshot, WithoutHistoryTheRunWouldDiffer) {
  // Guards the test above: resuming from the weights alone (no momentum
  // history) does not reproduce the straight run.
  auto straight = make(solver_param());
  straight->solve();
  auto first_half = make(solver_param("max_iter: 4"));
  first_half->solve();
  auto weights_only = make(solver_param("max_iter: 4"));
  weights_only->net().copy_trained_layers_from(path("lin_iter_4.caffemodel"));
  weights_only->step(4);
  EXPECT_NE(weights(*weights_only), weights(*straight));
}

TEST_F(Snapshot, RestoreFindsSnapshotsMovedTogether) {
  auto solver = make(solver_param("max_iter: 4"));
  solver->solve();
  fs::create_directories(dir_ / "moved");
  fs::rename(path("lin_iter_4.caffemodel"), path("moved/lin_iter_4.caffemodel"));
  fs::rename(path("lin_iter_4.solverstate"), path("moved/lin_iter_4.solverstate"));
  auto resumed = make(solver_param());
  resumed->restore(path("moved/lin_iter_4.solverstate"));
  EXPECT_EQ(weights(*resumed), weights(*solver));

  fs::remove(path("moved/lin_iter_4.caffemodel"));
  auto orphan = make(solver_param());
  const std::string message = restore_error(*orphan, path("moved/lin_iter_4.solverstate"));
  EXPECT_NE(message.find("needs the weights '" + path("lin_iter_4.caffemodel") + "'"),
            std::string::npos)
      << message;
}

TEST_F(Snapshot, RestoringACaffemodelIsAnError) {
  auto solver = make(solver_param("max_iter: 2"));
  solver->solve();
  auto other = make(solver_param());
  const std::string message = restore_error(*other, path("lin_iter_2.caffemodel"));
  EXPECT_NE(message.find("'" + path("lin_iter_2.caffemodel") +
                         "' is not a solver state: it is a .caffemodel"),
            std::string::npos)
      << message;
  EXPECT_EQ(other->iter(), 0);  // nothing was changed
}

TEST_F(Snapshot, RestoringAnotherNetsStateIsAnError) {
  auto solver = make(solver_param("max_iter: 2"));
  solver->solve();
  const std::string state = path("lin_iter_2.solverstate");

  // One learnable parameter instead of two.
  auto scalar = create_solver(testing::solver_param(scalar_net(), ""), quiet_solver_options());
  std::string message = restore_error(*scalar, state);
  EXPECT_NE(message.find("is not a solver state of this net: it holds 2 history blobs but net "
                         "'linear_regression' has 1 learnable parameters"),
            std::string::npos)
      << message;

  // Two parameters, other shapes.
  auto wider = create_solver(testing::solver_param(linear_regression_net(1, 2, 3, true), ""),
                             quiet_solver_options());
  message = restore_error(*wider, state);
  EXPECT_NE(message.find("is not a solver state of this net: its history blob 0 has shape (2, 2) "
                         "but parameter 'linear/0' of net 'linear_regression' has shape (3, 2)"),
            std::string::npos)
      << message;
  EXPECT_EQ(wider->iter(), 0);
}

TEST_F(Snapshot, RestoringGarbageOrNothingIsAnError) {
  auto solver = make(solver_param());
  {
    std::ofstream garbage(path("garbage.solverstate"));
    garbage << "this is not a protobuf";
  }
  EXPECT_NE(restore_error(*solver, path("garbage.solverstate")).find("is not a solver state"),
            std::string::npos);
  EXPECT_NE(restore_error(*solver, path("missing.solverstate")).find("cannot open"),
            std::string::npos);
  {
    std::ofstream not_hdf5(path("lin_iter_4.solverstate.h5"));
    not_hdf5 << "not HDF5 either";
  }
  EXPECT_NE(restore_error(*solver, path("lin_iter_4.solverstate.h5"))
                .find("is named like an HDF5 solver state but is not an HDF5 file"),
            std::string::npos);
}

TEST_F(Snapshot, ActionRequestsSnapshotAndStop) {
  auto solver = make(solver_param());
  int polls = 0;
  solver->set_action_request_function([&polls] {
    ++polls;
    if (polls == 3) return Solver::Action::kSnapshot;
    if (polls == 5) return Solver::Action::kStop;
    return Solver::Action::kNone;
  });
  solver->solve();
  EXPECT_TRUE(fs::exists(path("lin_iter_3.solverstate")));
  // Stopped after iteration 5; snapshot_after_train still saves the work.
  EXPECT_EQ(solver->iter(), 5);
  EXPECT_TRUE(solver->requested_early_exit());
  EXPECT_TRUE(fs::exists(path("lin_iter_5.caffemodel")));
  EXPECT_TRUE(fs::exists(path("lin_iter_5.solverstate")));
}

TEST_F(Snapshot, SnapshotMinutesSnapshotsOnTheClockAsWellAsByIteration) {
  // 0.0025 minutes = 150 ms; each iteration takes at least 60 ms here.
  auto solver = make(solver_param("snapshot: 0 snapshot_minutes: 0.0025 max_iter: 8 "
                                  "snapshot_after_train: false"));
  solver->set_action_request_function([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    return Solver::Action::kNone;
  });
  solver->solve();
  std::vector<int> iterations;
  for (const SnapshotOnDisk& snapshot : list_snapshots(path("lin"))) {
    iterations.push_back(snapshot.iter);
  }
  // Every third iteration at 60 ms each (more often on a loaded machine);
  // without snapshot_minutes there would be none.
  EXPECT_GE(iterations.size(), 2u);
}

TEST_F(Snapshot, AFailedWriteDoesNotStopTraining) {
  auto solver = make(solver_param("snapshot: 1 max_iter: 2"));
  fs::remove_all(dir_);  // the directory vanishes after the start
  const LogSeverity saved = min_log_severity();
  set_min_log_severity(LogSeverity::kInfo);
  ::testing::internal::CaptureStderr();
  EXPECT_NO_THROW(solver->solve());
  const std::string log = ::testing::internal::GetCapturedStderr();
  set_min_log_severity(saved);
  EXPECT_EQ(solver->iter(), 2);
  EXPECT_TRUE(solver->last_snapshot_paths().empty());
  EXPECT_NE(log.find("Snapshot at iteration 1 failed; training continues"), std::string::npos)
      << log;
}

TEST_F(Snapshot, BadSettingsAreErrorsAtConstruction) {
  auto error_of = [&](const SolverParameter& param) -> std::string {
    try {
      make(param);
    } catch (const Error& error) {
      return error.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error_of(solver_param("snapshot_keep: -1")).find("snapshot_keep must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of(solver_param("max_seconds: -5")).find("max_seconds must be >= 0"),
            std::string::npos);
  SolverParameter unwritable = solver_param("snapshot: 10");
  unwritable.set_snapshot_prefix(path("no/such/dir/lin"));
  EXPECT_NE(
      error_of(unwritable)
          .find("cannot write snapshots with snapshot_prefix '" + path("no/such/dir/lin") + "'"),
      std::string::npos);
}

TEST(SnapshotPrefix, DefaultsFollowTheSolverFile) {
  SolverParameter param;
  fill_default_snapshot_prefix(&param, "examples/mnist/lenet_solver.prototxt");
  EXPECT_EQ(param.snapshot_prefix(), "examples/mnist/lenet_solver");

  param.set_snapshot_prefix("snapshots/");
  fill_default_snapshot_prefix(&param, "examples/mnist/lenet_solver.prototxt");
  EXPECT_EQ(param.snapshot_prefix(), "snapshots/lenet_solver");

  param.set_snapshot_prefix("examples/mnist/lenet");
  fill_default_snapshot_prefix(&param, "examples/mnist/lenet_solver.prototxt");
  EXPECT_EQ(param.snapshot_prefix(), "examples/mnist/lenet");
}

}  // namespace
}  // namespace xtrain

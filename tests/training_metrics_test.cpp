// The metrics file: its JSON lines, reading them back (and saying where a
// line is wrong), and the records the solver appends while it trains and
// after it resumes.
#include "reporting/training_metrics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "report_test_support.hpp"
#include "reporting/training_report.hpp"
#include "solver_test_net.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/lr_policy.hpp"

namespace xtrain {
namespace {

using testing::read_text_file;
using testing::TempDir;

std::string error_of(const std::string& line) {
  try {
    metrics_record_from_json(line);
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(TrainingMetrics, TrainAndTestRecordsRoundTrip) {
  MetricsRecord train;
  train.kind = MetricsRecord::Kind::kTrain;
  train.iteration = 100;
  train.seconds = 2.5;
  train.loss = 0.3125;
  train.lr = 0.00992565;
  train.images_per_second = 2600;
  train.outputs = {{"loss", 0.29f}, {"top-5", 0.75}};
  const std::string line = metrics_record_to_json(train);
  EXPECT_EQ(line,
            "{\"kind\":\"train\",\"iteration\":100,\"seconds\":2.5,\"loss\":0.3125,"
            "\"lr\":0.00992565,\"outputs\":{\"loss\":0.29,\"top-5\":0.75},"
            "\"images_per_second\":2600}");
  const MetricsRecord back = metrics_record_from_json(line);
  EXPECT_EQ(back.kind, MetricsRecord::Kind::kTrain);
  EXPECT_EQ(back.iteration, 100);
  EXPECT_DOUBLE_EQ(back.seconds, 2.5);
  EXPECT_DOUBLE_EQ(*back.loss, 0.3125);
  EXPECT_FLOAT_EQ(static_cast<float>(*back.lr), 0.00992565f);
  EXPECT_DOUBLE_EQ(*back.images_per_second, 2600);
  ASSERT_EQ(back.outputs.size(), 2u);
  EXPECT_EQ(back.outputs[1].first, "top-5");
  EXPECT_FLOAT_EQ(static_cast<float>(back.outputs[0].second), 0.29f);

  MetricsRecord test;
  test.kind = MetricsRecord::Kind::kTest;
  test.iteration = 500;
  test.net = 1;
  test.outputs = {{"accuracy", 0.98}};
  const MetricsRecord test_back = metrics_record_from_json(metrics_record_to_json(test));
  EXPECT_EQ(test_back.kind, MetricsRecord::Kind::kTest);
  EXPECT_EQ(test_back.net, 1);
  EXPECT_EQ(test_back.iteration, 500);
  EXPECT_FALSE(test_back.loss.has_value());
}

TEST(TrainingMetrics, RunRecordKeepsTheSolverTextExactly) {
  MetricsRecord run;
  run.kind = MetricsRecord::Kind::kRun;
  run.net_name = "Le\"Net\\";
  run.device = "GPU 0";
  run.start_time = "2026-11-22 12:00:00";
  run.solver_text = "net: \"a.prototxt\"\n\tbase_lr: 0.01\n\x01";
  const std::string line = metrics_record_to_json(run);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  const MetricsRecord back = metrics_record_from_json(line);
  EXPECT_EQ(back.kind, MetricsRecord::Kind::kRun);
  EXPECT_EQ(back.net_name, run.net_name);
  EXPECT_EQ(back.device, run.device);
  EXPECT_EQ(back.start_time, run.start_time);
  EXPECT_EQ(back.solver_text, run.solver_text);
}

// Mixed precision: the run's precision, the loss scale and the updates it
// skipped; written only when there is something to say, so fp32 runs' lines
// stay as they were.
TEST(TrainingMetrics, PrecisionAndLossScaleRoundTrip) {
  MetricsRecord run;
  run.kind = MetricsRecord::Kind::kRun;
  run.precision = "fp16, loss scale 65536 (adaptive, 0 updates skipped)";
  const std::string run_line = metrics_record_to_json(run);
  EXPECT_NE(run_line.find("\"precision\":\"fp16, loss scale 65536"), std::string::npos)
      << run_line;
  EXPECT_EQ(metrics_record_from_json(run_line).precision, run.precision);
  MetricsRecord train;
  train.kind = MetricsRecord::Kind::kTrain;
  train.loss_scale = 32768;
  train.skipped_updates = 3;
  const std::string train_line = metrics_record_to_json(train);
  EXPECT_NE(train_line.find("\"loss_scale\":32768,\"skipped_updates\":3"), std::string::npos)
      << train_line;
  const MetricsRecord back = metrics_record_from_json(train_line);
  EXPECT_DOUBLE_EQ(*back.loss_scale, 32768);
  EXPECT_DOUBLE_EQ(*back.skipped_updates, 3);
  MetricsRecord plain;
  plain.kind = MetricsRecord::Kind::kTrain;
  EXPECT_EQ(metrics_record_to_json(plain).find("loss_scale"), std::string::npos);
  plain.kind = MetricsRecord::Kind::kRun;
  EXPECT_EQ(metrics_record_to_json(plain).find("precision"), std::string::npos);
}

TEST(TrainingMetrics, ADivergedLossIsNullAndReadsBackAsUnknown) {
  MetricsRecord train;
  train.loss = std::numeric_limits<double>::quiet_NaN();
  train.outputs = {{"loss", std::numeric_limits<double>::infinity()}};
  const std::string line = metrics_record_to_json(train);
  EXPECT_NE(line.find("\"loss\":null"), std::string::npos) << line;
  const MetricsRecord back = metrics_record_from_json(line);
  EXPECT_FALSE(back.loss.has_value());
  EXPECT_TRUE(std::isnan(back.outputs.at(0).second));
}

TEST(TrainingMetrics, UnknownFieldsAreSkipped) {
  const MetricsRecord record = metrics_record_from_json(
      R"({"kind":"test","extra":[1,{"a":true},null],"iteration":7,"net":0,"outputs":{}})");
  EXPECT_EQ(record.iteration, 7);
}

TEST(TrainingMetrics, MalformedLinesSayWhatAndWhere) {
  EXPECT_NE(error_of(R"({"iteration":1})").find("no \"kind\""), std::string::npos);
  EXPECT_NE(error_of(R"({"kind":"valid"})").find("unknown kind \"valid\""), std::string::npos);
  // Syntax errors name the column (the JSON parser's own words follow).
  EXPECT_EQ(error_of(R"({"kind":"train","iteration":x})").rfind("column 29: ", 0), 0u)
      << error_of(R"({"kind":"train","iteration":x})");
  EXPECT_NE(error_of(R"({"kind":"train")").find("unexpected end of input"), std::string::npos)
      << error_of(R"({"kind":"train")");
  EXPECT_NE(error_of(R"({"kind":"train"} trailing)").find("expected end of input"),
            std::string::npos)
      << error_of(R"({"kind":"train"} trailing)");
  EXPECT_NE(error_of(R"({"kind":"train","seconds":"5"})").find("\"seconds\" must be a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind":"train","outputs":[1]})").find("\"outputs\" must be an object"),
            std::string::npos);
  EXPECT_NE(error_of("[1,2]").find("expected a JSON object"), std::string::npos);
}

// Found by fuzz/metrics_jsonl_fuzzer: a number beyond a double's range is
// the JSON library's out_of_range, not a parse error; it must still be our
// error naming where it is.
TEST(TrainingMetrics, ANumberTooLargeForADoubleIsAnError) {
  const std::string error = error_of(R"({"kind":"train","seconds":1e30801})");
  EXPECT_EQ(error.rfind("number overflow parsing '1e30801'", 0), 0u) << error;
}

// Found by fuzz/metrics_jsonl_fuzzer: 1e308 was converted to an int
// (undefined behaviour).
TEST(TrainingMetrics, CountsOutOfTheIntRangeAreRefused) {
  EXPECT_NE(error_of(R"({"kind":"train","iteration":1e308})")
                .find("\"iteration\" must be a whole number from 0 to 2147483647, got 1e+308"),
            std::string::npos)
      << error_of(R"({"kind":"train","iteration":1e308})");
  EXPECT_NE(error_of(R"({"kind":"test","iteration":1,"net":-1})").find("\"net\" must be"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"kind":"test","iteration":2.5})").find("got 2.5"), std::string::npos);
  EXPECT_EQ(metrics_record_from_json(R"({"kind":"train","iteration":2147483647})").iteration,
            2147483647);
}

TEST(TrainingMetrics, ReadingAFileNamesTheBadLine) {
  TempDir dir("metrics_read");
  const std::string path = dir.write(
      "m.jsonl",
      "{\"kind\":\"train\",\"iteration\":1,\"outputs\":{}}\n\n{\"kind\":\"train\",\"iteration\"\n");
  try {
    read_metrics_file(path);
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(path + ":3: not a metrics record"), std::string::npos)
        << error.what();
  }
  // A resume drops a last line cut off by a kill instead.
  EXPECT_EQ(read_metrics_file(path, true).size(), 1u);
}

TEST(TrainingMetrics, AFreshStartReplacesTheFileAndAResumeAppends) {
  TempDir dir("metrics_append");
  const std::string path = dir.write("m.jsonl",
                                     "{\"kind\":\"train\",\"iteration\":1,\"outputs\":{}}\n"
                                     "{\"kind\":\"train\",\"iteration\":2,\"outp");
  MetricsRecord record;
  record.iteration = 3;
  {
    TrainingMetrics resumed(path, /*resume=*/true);
    EXPECT_EQ(resumed.records().size(), 1u);  // the cut-off line dropped
    resumed.add(record);
    EXPECT_EQ(resumed.records().size(), 2u);
  }
  std::vector<std::string> lines = lines_of(read_text_file(path));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "{\"kind\":\"train\",\"iteration\":1,\"outputs\":{}}");
  EXPECT_EQ(metrics_record_from_json(lines[2]).iteration, 3);  // on a line of its own
  {
    TrainingMetrics fresh(path, /*resume=*/false);
    EXPECT_TRUE(fresh.records().empty());
    fresh.add(record);
  }
  EXPECT_EQ(lines_of(read_text_file(path)).size(), 1u);
}

// The solver with the recorder `xtrain train` adds.
std::unique_ptr<Solver> recording_solver(const SolverParameter& param, const TempDir& dir) {
  std::unique_ptr<Solver> solver = create_solver(param, testing::quiet_solver_options());
  solver->add_observer(
      make_training_recorder(dir.file("lin_metrics.jsonl"), dir.file("lin_report.html")));
  return solver;
}

std::vector<int> iterations_of(const std::vector<MetricsRecord>& records,
                               MetricsRecord::Kind kind) {
  std::vector<int> iterations;
  for (const MetricsRecord& record : records) {
    if (record.kind == kind) iterations.push_back(record.iteration);
  }
  return iterations;
}

TEST(TrainingMetrics, TheSolverRecordsEachDisplayAndTest) {
  TempDir dir("metrics_solver");
  const SolverParameter param = testing::eventful_solver(dir.file("lin"));
  auto solver = recording_solver(param, dir);
  solver->solve();

  const std::vector<MetricsRecord> records = read_metrics_file(dir.file("lin_metrics.jsonl"));
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.front().kind, MetricsRecord::Kind::kRun);
  EXPECT_EQ(records.front().net_name, solver->net().name());
  EXPECT_NE(records.front().solver_text.find("lr_policy: \"inv\""), std::string::npos);
  // Displays at 0, 2, 4 and the final one at 6; tests at 0 (test_initialization), 3 and 6.
  EXPECT_EQ(iterations_of(records, MetricsRecord::Kind::kTrain), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(iterations_of(records, MetricsRecord::Kind::kTest), (std::vector<int>{0, 3, 6}));
  double previous_seconds = -1;
  for (const MetricsRecord& record : records) {
    EXPECT_GE(record.seconds, previous_seconds);
    previous_seconds = record.seconds;
    if (record.kind != MetricsRecord::Kind::kTrain || record.iteration == 6) continue;
    // The rate the update at this iteration used.
    int step = 0;
    ASSERT_TRUE(record.lr.has_value());
    EXPECT_FLOAT_EQ(static_cast<float>(*record.lr), learning_rate(param, record.iteration, &step));
    ASSERT_EQ(record.outputs.size(), 1u);
    EXPECT_EQ(record.outputs[0].first, "loss");
  }
  // The last test record holds what the solver reports.
  const MetricsRecord& last_test = records.back().kind == MetricsRecord::Kind::kTest
                                       ? records.back()
                                       : records[records.size() - 2];
  ASSERT_EQ(solver->last_test_results().size(), 1u);
  ASSERT_EQ(last_test.outputs.size(), solver->last_test_results()[0].size());
  EXPECT_FLOAT_EQ(static_cast<float>(last_test.outputs[0].second),
                  solver->last_test_results()[0][0].second);

  // The report shows the same last points.
  const auto points = testing::report_last_points(read_text_file(dir.file("lin_report.html")));
  ASSERT_TRUE(points.count("test #0 loss")) << read_text_file(dir.file("lin_report.html"));
  EXPECT_EQ(points.at("test #0 loss").iteration, 6);
  EXPECT_EQ(points.at("train loss").iteration, 6);
  EXPECT_EQ(points.at("learning rate").iteration, 4);
  EXPECT_NE(read_text_file(dir.file("lin_report.html")).find(dir.file("lin_iter_6.solverstate")),
            std::string::npos);
}

TEST(TrainingMetrics, AResumedSolverAppendsAndTheChartsContinue) {
  TempDir dir("metrics_resume");
  const SolverParameter param = testing::eventful_solver(dir.file("lin"));
  {
    SolverParameter stop_early = param;
    stop_early.set_max_iter(4);  // displays 0, 2; snapshot at 3 and 4
    recording_solver(stop_early, dir)->solve();
  }
  const std::string first_session = read_text_file(dir.file("lin_metrics.jsonl"));
  ASSERT_FALSE(first_session.empty());
  recording_solver(param, dir)->solve(dir.file("lin_iter_3.solverstate"));

  const std::string both = read_text_file(dir.file("lin_metrics.jsonl"));
  EXPECT_EQ(both.substr(0, first_session.size()), first_session);  // kept, not clobbered
  const std::vector<MetricsRecord> records = read_metrics_file(dir.file("lin_metrics.jsonl"));
  EXPECT_EQ(iterations_of(records, MetricsRecord::Kind::kRun), (std::vector<int>{0, 3}));
  // The second session displayed at 4 again: the report keeps its point.
  const std::vector<MetricsRecord> latest = latest_history(records);
  EXPECT_EQ(iterations_of(latest, MetricsRecord::Kind::kTrain), (std::vector<int>{0, 2, 4, 6}));
  const auto points = testing::report_last_points(read_text_file(dir.file("lin_report.html")));
  EXPECT_EQ(points.at("train loss").iteration, 6);
}

}  // namespace
}  // namespace xtrain

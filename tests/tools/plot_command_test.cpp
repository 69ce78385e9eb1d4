// `xtrain plot` as a user runs it: the report from a BVLC Caffe log, from an
// xtrain log and from a metrics file, with the last points of its curves
// checked against the lines they came from; and errors that name the file
// and line.
#include <gtest/gtest.h>

#include <regex>

#include "report_test_support.hpp"
#include "tools/report_training_fixture.hpp"

namespace xtrain::testing {
namespace {

const std::string kCaffeLog =
    std::string(XTRAIN_SOURCE_DIR) + "/tests/fixtures/caffe_lenet_train.log";

ToolResult plot(const std::string& arguments) {
  return run_tool(tool_path("xtrain") + " plot " + arguments);
}

// The last match of `pattern`'s first group in `text`.
std::string last_capture(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::string last;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    last = (*it)[1];
  }
  return last;
}

TEST(PlotCommand, CaffeLogGivesChartsEndingAtTheLogsLastPoints) {
  TempDir dir("plot_caffe");
  const ToolResult result = plot(kCaffeLog + " -o " + dir.file("caffe.html"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "Wrote " + dir.file("caffe.html"));
  const std::string html = read_text_file(dir.file("caffe.html"));
  const auto points = report_last_points(html);
  // The fixture's last lines: the final "Iteration 5000, loss = 0.0191826",
  // the test at 5000 and the rate printed at 4900.
  ASSERT_EQ(points.size(), 4u) << html;
  EXPECT_EQ(points.at("train loss").iteration, 5000);
  EXPECT_EQ(points.at("train loss").text, "0.0191826");
  EXPECT_EQ(points.at("test #0 accuracy").iteration, 5000);
  EXPECT_EQ(points.at("test #0 accuracy").text, "0.9891");
  EXPECT_EQ(points.at("test #0 loss").text, "0.0316792");
  EXPECT_EQ(points.at("learning rate").iteration, 4900);
  const std::string log = read_text_file(kCaffeLog);
  EXPECT_EQ(points.at("learning rate").text, last_capture(log, R"(Iteration 4900, lr = (\S+))"));
  // The header lines: net, solver parameters, snapshots.
  EXPECT_CONTAINS(html, "<title>Training report: LeNet</title>");
  EXPECT_CONTAINS(html, "lr_policy: &quot;inv&quot;");
  EXPECT_CONTAINS(html, "<code>examples/mnist/lenet_iter_5000.solverstate</code>");
}

TEST(PlotCommand, DefaultOutputIsBesideTheInput) {
  TempDir dir("plot_default");
  const std::string log = dir.write("lenet.log", read_text_file(kCaffeLog));
  const ToolResult result = plot(log);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_FALSE(read_text_file(dir.file("lenet_plot.html")).empty());
}

// Plotting a training's own metrics keeps the report the training wrote.
TEST(PlotCommand, DefaultOutputNeverReplacesTheTrainingsReport) {
  TempDir dir("plot_keeps_report");
  const std::string metrics = dir.write(
      "lenet_metrics.jsonl", "{\"kind\":\"train\",\"iteration\":1,\"loss\":0.5,\"outputs\":{}}\n");
  const std::string report = dir.write("lenet_report.html", "the training's own report");
  const ToolResult result = plot(metrics);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(read_text_file(report), "the training's own report");
  EXPECT_FALSE(read_text_file(dir.file("lenet_plot.html")).empty());
}

// One training through the tool gives a log and a metrics file; both plot
// to the same curves, ending where the log ends.
class PlotTrainingOutputs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("plot_xtrain");
    result_ = new ToolResult(train_tiny_lenet(*dir_, 40));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete result_;
  }
  static TempDir* dir_;
  static ToolResult* result_;
};
TempDir* PlotTrainingOutputs::dir_ = nullptr;
ToolResult* PlotTrainingOutputs::result_ = nullptr;

TEST_F(PlotTrainingOutputs, XtrainLogAndMetricsPlotTheSameLastPoints) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  const std::string log = read_text_file(dir_->file("train.log"));
  ToolResult result = plot(dir_->file("train.log") + " -o " + dir_->file("from_log.html"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result = plot(dir_->file("tiny_metrics.jsonl") + " -o " + dir_->file("from_metrics.html"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const auto from_log = report_last_points(read_text_file(dir_->file("from_log.html")));
  const auto from_metrics = report_last_points(read_text_file(dir_->file("from_metrics.html")));

  // From the log's own lines.
  ASSERT_TRUE(from_log.count("train loss")) << log;
  EXPECT_EQ(from_log.at("train loss").iteration, 40);
  EXPECT_EQ(from_log.at("train loss").text, last_capture(log, R"(Iteration 40, loss = (\S+))"));
  EXPECT_EQ(from_log.at("test #0 accuracy").text,
            last_capture(log, R"(Test net output #\d+: accuracy = (\S+))"));
  EXPECT_EQ(from_log.at("learning rate").text, last_capture(log, R"(Iteration 30, lr = (\S+))"));
  EXPECT_EQ(from_log.at("images/s").iteration, 30);

  // The metrics file holds the same values (to the log's 6 digits).
  for (const std::string name :
       {"train loss", "test #0 accuracy", "test #0 loss", "learning rate"}) {
    ASSERT_TRUE(from_metrics.count(name)) << name;
    EXPECT_EQ(from_metrics.at(name).iteration, from_log.at(name).iteration) << name;
    EXPECT_NEAR(from_metrics.at(name).value, from_log.at(name).value,
                1e-5 * std::abs(from_log.at(name).value))
        << name;
  }
  // Beside <prefix>_metrics.jsonl, plot finds the snapshots.
  EXPECT_CONTAINS(read_text_file(dir_->file("from_metrics.html")), "tiny_iter_30.caffemodel");
}

TEST_F(PlotTrainingOutputs, TrainWritesTheReportBesideTheSnapshots) {
  ASSERT_EQ(result_->exit_code, 0) << result_->output;
  const std::string html = read_text_file(dir_->file("tiny_report.html"));
  const auto points = report_last_points(html);
  ASSERT_TRUE(points.count("test #0 loss")) << html;
  EXPECT_EQ(points.at("test #0 loss").iteration, 40);
  EXPECT_CONTAINS(html, dir_->file("tiny_iter_30.solverstate"));
  EXPECT_CONTAINS(html, "<th>device</th><td>CPU</td>");
  EXPECT_CONTAINS(result_->output, "Training report: " + dir_->file("tiny_report.html"));
}

TEST(PlotCommand, MalformedInputIsAnErrorNamingFileAndLine) {
  TempDir dir("plot_errors");
  const std::string metrics =
      dir.write("bad_metrics.jsonl",
                "{\"kind\":\"train\",\"iteration\":1,\"outputs\":{}}\n{\"kind\":\"train\",}\n");
  std::string line = expect_one_line_error(plot(metrics), "xtrain plot");
  EXPECT_CONTAINS(line, metrics + ":2: not a metrics record");

  const std::string log =
      dir.write("bad.log",
                "I1121 10:00:00.000000  1234 solver.cpp:273] Solving LeNet\n"
                "I1121 10:00:01.000000  1234 solver.cpp:218] Iteration 100, loss = 0.3\n"
                "I1121 10:00:02.000000  1234 solver.cpp:397]     Test net output "
                "#0: accuracy = high\n");
  line = expect_one_line_error(plot(log), "xtrain plot");
  EXPECT_CONTAINS(line, log + ":3: 'high' is not a number");

  const std::string not_a_log = dir.write("notes.txt", "shopping list\nmilk\n");
  line = expect_one_line_error(plot(not_a_log), "xtrain plot");
  EXPECT_CONTAINS(line, not_a_log + ": no training lines found");

  line = expect_one_line_error(plot(dir.write("empty.jsonl", "")), "xtrain plot");
  EXPECT_CONTAINS(line, "is empty");
  line = expect_one_line_error(plot(dir.file("missing.log")), "xtrain plot");
  EXPECT_CONTAINS(line, "cannot open");
  line = expect_one_line_error(plot(""), "xtrain plot");
  EXPECT_CONTAINS(line, "give one file, a training log or a metrics .jsonl");
}

}  // namespace
}  // namespace xtrain::testing

// The training report page: which curves each chart draws, their last
// points, a resumed session replacing the points it recomputed, and the
// page being self-contained.
#include "reporting/training_report.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "report_test_support.hpp"

namespace xtrain {
namespace {

using testing::report_chart;
using testing::report_last_points;

MetricsRecord train_record(int iteration, double loss, double lr) {
  MetricsRecord record;
  record.kind = MetricsRecord::Kind::kTrain;
  record.iteration = iteration;
  record.loss = loss;
  record.lr = lr;
  record.images_per_second = 1000 + iteration;
  record.outputs = {{"loss", loss}};
  return record;
}

MetricsRecord test_record(int iteration, int net, double accuracy, double loss) {
  MetricsRecord record;
  record.kind = MetricsRecord::Kind::kTest;
  record.iteration = iteration;
  record.net = net;
  record.outputs = {{"accuracy", accuracy}, {"loss", loss}};
  return record;
}

MetricsRecord run_record(int iteration, const std::string& solver_text) {
  MetricsRecord record;
  record.kind = MetricsRecord::Kind::kRun;
  record.iteration = iteration;
  record.net_name = "LeNet";
  record.device = "CPU";
  record.start_time = "2026-11-22 12:00:00";
  record.solver_text = solver_text;
  return record;
}

ReportContents lenet_run() {
  ReportContents contents;
  contents.records = {run_record(0, "base_lr: 0.01\nnet: \"<lenet>.prototxt\"")};
  for (int iteration = 0; iteration <= 1000; iteration += 100) {
    if (iteration % 500 == 0) {
      contents.records.push_back(
          test_record(iteration, 0, 0.5 + iteration / 2500.0, 1.0 - iteration / 2000.0));
    }
    contents.records.push_back(
        train_record(iteration, 2.0 / (1 + iteration / 100.0), 0.01 - iteration * 1e-6));
  }
  contents.snapshots = {"/tmp/lenet_iter_1000.caffemodel", "/tmp/lenet_iter_1000.solverstate"};
  return contents;
}

TEST(TrainingReport, EachChartDrawsItsCurvesWithTheirLastPoints) {
  const std::string html = build_training_report(lenet_run());
  const auto loss = report_last_points(report_chart(html, "loss-chart"));
  ASSERT_EQ(loss.size(), 2u) << report_chart(html, "loss-chart");
  EXPECT_EQ(loss.at("train loss").iteration, 1000);
  EXPECT_EQ(loss.at("train loss").text, "0.181818");  // 2 / 11
  EXPECT_EQ(loss.at("test #0 loss").iteration, 1000);
  EXPECT_DOUBLE_EQ(loss.at("test #0 loss").value, 0.5);

  // Accuracy is a score, not a loss; the losses are not scores.
  const auto scores = report_last_points(report_chart(html, "test-score-chart"));
  ASSERT_EQ(scores.size(), 1u);
  EXPECT_EQ(scores.at("test #0 accuracy").iteration, 1000);
  EXPECT_DOUBLE_EQ(scores.at("test #0 accuracy").value, 0.9);

  const auto lr = report_last_points(report_chart(html, "learning-rate-chart"));
  EXPECT_DOUBLE_EQ(lr.at("learning rate").value, 0.009);
  const auto throughput = report_last_points(report_chart(html, "throughput-chart"));
  EXPECT_DOUBLE_EQ(throughput.at("images/s").value, 2000);

  // The same point in the curve's <title>, for a reader of the page.
  EXPECT_NE(html.find("<title>test #0 accuracy: last point iteration 1000, value 0.9</title>"),
            std::string::npos);
}

TEST(TrainingReport, CurvePointsSpanThePlotArea) {
  const std::string chart = report_chart(build_training_report(lenet_run()), "loss-chart");
  // Train loss: 11 points from the left edge (x 80) to the right (x 1080).
  const std::size_t start = chart.find("data-series=\"train loss\"");
  ASSERT_NE(start, std::string::npos);
  const std::size_t points = chart.find("points=\"", start) + 8;
  const std::string coordinates = chart.substr(points, chart.find('"', points) - points);
  EXPECT_EQ(coordinates.rfind("80.0,", 0), 0u) << coordinates;
  EXPECT_NE(coordinates.find(" 1080.0,"), std::string::npos) << coordinates;
  EXPECT_EQ(std::count(coordinates.begin(), coordinates.end(), ','), 11);
}

TEST(TrainingReport, IsSelfContainedAndEscapesWhatItQuotes) {
  const std::string html = build_training_report(lenet_run());
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"),
            html.find("http://www.w3.org/2000/svg"));  // the SVG namespace only
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("net: &quot;&lt;lenet&gt;.prototxt&quot;"), std::string::npos);
  EXPECT_NE(html.find("<code>/tmp/lenet_iter_1000.solverstate</code>"), std::string::npos);
  EXPECT_NE(html.find("<title>Training report: LeNet</title>"), std::string::npos);
}

TEST(TrainingReport, AResumedSessionReplacesThePointsItRecomputed) {
  ReportContents contents = lenet_run();
  // Killed after 1000, resumed from the snapshot at 500: 600.. again.
  contents.records.push_back(run_record(500, ""));
  contents.records.push_back(test_record(500, 0, 0.7, 0.75));
  contents.records.push_back(train_record(600, 0.25, 0.0094));
  const std::vector<MetricsRecord> latest = latest_history(contents.records);
  std::vector<int> train_iterations;
  for (const MetricsRecord& record : latest) {
    if (record.kind == MetricsRecord::Kind::kTrain) train_iterations.push_back(record.iteration);
  }
  EXPECT_EQ(train_iterations, (std::vector<int>{0, 100, 200, 300, 400, 500, 600}));
  const std::string html = build_training_report(contents);
  const auto points = report_last_points(html);
  EXPECT_EQ(points.at("train loss").iteration, 600);
  // A dashed line marks the resume on each of the 4 charts.
  std::size_t markers = 0;
  for (std::size_t at = html.find("class=\"resume\""); at != std::string::npos;
       at = html.find("class=\"resume\"", at + 1)) {
    ++markers;
  }
  EXPECT_EQ(markers, 4u);
  EXPECT_DOUBLE_EQ(points.at("train loss").value, 0.25);
  EXPECT_EQ(points.at("test #0 accuracy").iteration, 500);
  EXPECT_DOUBLE_EQ(points.at("test #0 accuracy").value, 0.7);
}

TEST(TrainingReport, SeveralTestNetsAndNoDataYet) {
  ReportContents contents;
  contents.records = {test_record(0, 0, 0.1, 2.3), test_record(0, 1, 0.2, 2.2)};
  const std::string html = build_training_report(contents);
  const auto points = report_last_points(html);
  EXPECT_TRUE(points.count("test #0 accuracy"));
  EXPECT_TRUE(points.count("test #1 accuracy"));
  EXPECT_FALSE(points.count("train loss"));
  EXPECT_NE(report_chart(html, "learning-rate-chart").find("no data yet"), std::string::npos);
}

TEST(TrainingReport, LossOutputsAreRecognisedByName) {
  EXPECT_TRUE(is_loss_output("loss"));
  EXPECT_TRUE(is_loss_output("rpn_Loss_bbox"));
  EXPECT_FALSE(is_loss_output("accuracy"));
  EXPECT_FALSE(is_loss_output("top-5"));
}

}  // namespace
}  // namespace xtrain

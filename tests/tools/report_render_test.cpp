// The training report as a browser shows it: a short training through
// `xtrain train`, its report rendered by headless Chromium, the screenshot
// checked for drawn curves, and the curves' last points checked against the
// metrics file. Skips when Chromium is not installed (scripts/install_deps.sh
// installs it).
#include <gtest/gtest.h>

#include <filesystem>

#include "report_render_support.hpp"
#include "report_test_support.hpp"
#include "reporting/training_metrics.hpp"
#include "tools/report_training_fixture.hpp"

namespace xtrain::testing {
namespace {

std::string six_digits(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6g", value);
  return text;
}

TEST(ReportRender, ChromiumDrawsTheChartsOfARealTraining) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    GTEST_SKIP()
        << "chromium is not installed (apt-get install chromium): cannot render the report";
  }
  TempDir dir("report_render");
  const ToolResult trained = train_tiny_lenet(dir, 60);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string report = dir.file("tiny_report.html");
  const std::string png = dir.file("report.png");
  std::string log;
  const cv::Mat image = render_page(chromium, report, png, &log);
  ASSERT_FALSE(image.empty()) << png << " is not an image:\n" << log;
  EXPECT_EQ(image.cols, 1200);
  EXPECT_EQ(image.rows, 1600);
  // Text, axes and curves: far from a blank page.
  EXPECT_GT(non_white_pixels(image), 1200 * 1600 / 50);
  // The curves' colours (#1f77b4 blue, #d62728 red): the loss and score
  // charts in the upper half, the learning rate and throughput below.
  EXPECT_GT(pixels_of_colour(image, 0x1f, 0x77, 0xb4, 150, 800), 500);
  EXPECT_GT(pixels_of_colour(image, 0xd6, 0x27, 0x28, 150, 800), 300);
  EXPECT_GT(pixels_of_colour(image, 0x1f, 0x77, 0xb4, 800, 1600), 500);

  // The last points drawn are the metrics file's last records.
  const std::vector<MetricsRecord> records = read_metrics_file(dir.file("tiny_metrics.jsonl"));
  const MetricsRecord* last_train = nullptr;
  const MetricsRecord* last_test = nullptr;
  for (const MetricsRecord& record : records) {
    if (record.kind == MetricsRecord::Kind::kTrain) last_train = &record;
    if (record.kind == MetricsRecord::Kind::kTest) last_test = &record;
  }
  ASSERT_TRUE(last_train && last_test);
  const auto points = report_last_points(read_text_file(report));
  ASSERT_TRUE(points.count("train loss") && points.count("test #0 accuracy"));
  EXPECT_EQ(points.at("train loss").iteration, last_train->iteration);
  EXPECT_EQ(points.at("train loss").text, six_digits(*last_train->loss));
  EXPECT_EQ(points.at("test #0 accuracy").iteration, last_test->iteration);
  double accuracy = -1;
  for (const auto& [name, value] : last_test->outputs) {
    if (name == "accuracy") accuracy = value;
  }
  EXPECT_EQ(points.at("test #0 accuracy").text, six_digits(accuracy));
  EXPECT_EQ(last_test->iteration, 60);
}

}  // namespace
}  // namespace xtrain::testing

// The training report as a browser shows it: a short training through
// `xtrain train`, its report rendered by headless Chromium, the screenshot
// checked for drawn curves, and the curves' last points checked against the
// metrics file. Skips when Chromium is not installed (scripts/install_deps.sh
// installs it).
#include <gtest/gtest.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "report_test_support.hpp"
#include "solvers/training_metrics.hpp"
#include "tools/report_training_fixture.hpp"

namespace xtrain::testing {
namespace {

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const ToolResult found = run_tool(std::string("command -v ") + name);
    if (found.exit_code == 0 && !found.output.empty()) return last_line(found.output);
  }
  return "";
}

// Pixels within `tolerance` (per channel) of an RGB colour, in rows [top, bottom).
int pixels_of_colour(const cv::Mat& image, int red, int green, int blue, int top, int bottom,
                     int tolerance = 40) {
  int count = 0;
  for (int y = std::max(0, top); y < std::min(bottom, image.rows); ++y) {
    for (int x = 0; x < image.cols; ++x) {
      const cv::Vec3b pixel = image.at<cv::Vec3b>(y, x);  // BGR
      if (std::abs(pixel[0] - blue) <= tolerance && std::abs(pixel[1] - green) <= tolerance &&
          std::abs(pixel[2] - red) <= tolerance) {
        ++count;
      }
    }
  }
  return count;
}

int non_white_pixels(const cv::Mat& image) {
  int count = 0;
  for (int y = 0; y < image.rows; ++y) {
    for (int x = 0; x < image.cols; ++x) {
      const cv::Vec3b pixel = image.at<cv::Vec3b>(y, x);
      if (pixel[0] < 240 || pixel[1] < 240 || pixel[2] < 240) ++count;
    }
  }
  return count;
}

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
  const ToolResult rendered =
      run_tool("timeout 60 " + chromium +
               " --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot=" + png +
               " --window-size=1200,1600 file://" + report);
  ASSERT_TRUE(std::filesystem::exists(png)) << rendered.output;

  const cv::Mat image = cv::imread(png, cv::IMREAD_COLOR);
  ASSERT_FALSE(image.empty()) << png << " is not an image";
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

// `xtrain classify` as a user runs it: Caffe's prediction lines, one-line
// errors naming the file, and its flags in --help.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "classifier_test_model.hpp"
#include "tool_runner.hpp"

namespace xtrain::testing {
namespace {

struct ClassifyFixture {
  TempDir dir{"classify_cli"};
  // logit k = pixel k of a 2x2 grey image (times the scale).
  TinyModel model = write_tiny_model(dir, 1, {0, 1, 2});
  std::string labels = dir.write("labels.txt", "cat\ndog\nbird\n");

  std::string command(const std::string& flags, const std::string& images) const {
    return tool_path("xtrain") + " classify --model=" + model.deploy +
           " --weights=" + model.weights + " " + flags + " " + images;
  }
};

// "0.6652 - \"bird\"": Caffe's classification.cpp line.
std::string caffe_line(double probability, const std::string& label) {
  char line[128];
  std::snprintf(line, sizeof(line), "%.4f - \"%s\"\n", probability, label.c_str());
  return line;
}

TEST(ClassifyCli, PrintsTopKLinesInCaffesFormatForEachImage) {
  ClassifyFixture fixture;
  // Logits at scale 0.01: 0.1, 0.2, 0.3 and 0.3, 0.1, 0.0.
  const std::string first = write_png(fixture.dir, "first.png", 1, 2, 2, {10, 20, 30, 0});
  const std::string second = write_png(fixture.dir, "second.png", 1, 2, 2, {30, 10, 0, 0});
  const ToolResult result = run_tool(
      fixture.command("--scale=0.01 --top_k=2 --labels=" + fixture.labels, first + " " + second));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const double first_sum = std::exp(0.1) + std::exp(0.2) + std::exp(0.3);
  const double second_sum = std::exp(0.3) + std::exp(0.1) + std::exp(0.0);
  const std::string expected =
      "---------- Prediction for " + first + " ----------\n" +
      caffe_line(std::exp(0.3) / first_sum, "bird") + caffe_line(std::exp(0.2) / first_sum, "dog") +
      "---------- Prediction for " + second + " ----------\n" +
      caffe_line(std::exp(0.3) / second_sum, "cat") + caffe_line(std::exp(0.1) / second_sum, "dog");
  EXPECT_CONTAINS(result.output, expected);
}

TEST(ClassifyCli, WithoutLabelsPrintsClassIndicesAndMeanValuesApply) {
  ClassifyFixture fixture;
  const std::string image = write_png(fixture.dir, "image.png", 1, 2, 2, {110, 100, 100, 0});
  // (110 - 100) * 0.1 = 1, then 0, 0: softmax e / (e + 2).
  const ToolResult result =
      run_tool(fixture.command("--mean_values=100 --scale=0.1 --top_k=1", image));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, "---------- Prediction for " + image + " ----------\n" +
                                     caffe_line(std::exp(1.0) / (std::exp(1.0) + 2), "0"));
}

TEST(ClassifyCli, ErrorsNameTheFile) {
  ClassifyFixture fixture;
  const std::string damaged = fixture.dir.write("damaged.png", "no pixels here");
  std::string line =
      expect_one_line_error(run_tool(fixture.command("", damaged)), "xtrain classify");
  EXPECT_CONTAINS(line, damaged);

  const std::string image = write_png(fixture.dir, "image.png", 1, 2, 2, {1, 2, 3, 4});
  const std::string short_labels = fixture.dir.write("short.txt", "cat\ndog\n");
  line = expect_one_line_error(run_tool(fixture.command("--labels=" + short_labels, image)),
                               "xtrain classify");
  EXPECT_CONTAINS(line, short_labels);
  EXPECT_CONTAINS(line, "3 classes");

  line = expect_one_line_error(run_tool(fixture.command("--mean=/no/such/mean.binaryproto", image)),
                               "xtrain classify");
  EXPECT_CONTAINS(line, "/no/such/mean.binaryproto");

  line = expect_one_line_error(run_tool(fixture.command("--mean_values=1,x", image)),
                               "xtrain classify");
  EXPECT_CONTAINS(line, "'x'");
  line = expect_one_line_error(run_tool(fixture.command("--mean_values=1,2", image)),
                               "xtrain classify");
  EXPECT_CONTAINS(line, "one per channel (1), not 2");

  line = expect_one_line_error(run_tool(fixture.command("", "")), "xtrain classify");
  EXPECT_CONTAINS(line, "image files");
}

TEST(ClassifyCli, OtherCommandsStillRejectExtraArguments) {
  const std::string line =
      expect_one_line_error(run_tool(tool_path("xtrain") + " time stray.png"), "xtrain time");
  EXPECT_CONTAINS(line, "'stray.png'");
}

TEST(ClassifyCli, HelpListsTheCommandAndItsFlags) {
  EXPECT_CONTAINS(run_tool(tool_path("xtrain") + " --help").output, "classify");
  const ToolResult result = run_tool(tool_path("xtrain") + " classify --help");
  for (const char* flag : {"--mean=", "--mean_values=", "--scale=", "--labels=", "--top_k="}) {
    EXPECT_CONTAINS(result.output, flag);
  }
}

}  // namespace
}  // namespace xtrain::testing

// `xtrain detect` as a user runs it: tiny YOLOv3 and SSD deploy nets whose
// detections are known (zero weights, biases set by hand, so every image
// gives the same box), the boxes printed in the image's pixels with the
// letterbox undone, --draw's copies, and one-line errors.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "classifier_test_model.hpp"
#include "tool_runner.hpp"
#include "xtrain/image_codec.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

// A 1 x 3 x 32 x 64 input averaged to one cell, then a 1 x 1 convolution
// whose biases are the predictions.
const char* kInputAndCell = R"(
layer { name: "data" type: "Input" top: "data"
        input_param { shape { dim: 1 dim: 3 dim: 32 dim: 64 } } }
layer { name: "cell" type: "Pooling" bottom: "data" top: "cell"
        pooling_param { pool: AVE global_pooling: true } }
)";

// YOLOv3: one anchor (16, 16) at the only cell, tx = ty = tw = th = 0: the
// box's centre is the input's, its size 16 / 64 x 16 / 32, i.e. (0.375,
// 0.25) - (0.625, 0.75). Objectness σ(ln 4) = 0.8, classes σ(20) = 1 and
// σ(-ln 4) = 0.2: label 1 at 0.8, label 2 at 0.16.
std::string yolo_deploy() {
  return std::string("name: \"tiny_yolo\"") + kInputAndCell + R"(
layer { name: "pred" type: "Convolution" bottom: "cell" top: "pred"
        convolution_param { num_output: 7 kernel_size: 1 } }
layer { name: "detection" type: "YoloDetectionOutput" bottom: "pred" bottom: "data"
        top: "detection"
        yolo_param { num_classes: 2 anchors: 16 anchors: 16 confidence_threshold: 0.05 } }
)";
}
const std::vector<float> kYoloBiases = {0, 0, 0, 0, 1.3862944f, 20, -1.3862944f};

// SSD: one prior of min_size 16 on the only cell, the same box; zero
// offsets; softmax of (0, ln 8, 0): label 1 at 0.8, label 2 at 0.1.
std::string ssd_deploy() {
  return std::string("name: \"tiny_ssd\"") + kInputAndCell + R"(
layer { name: "loc" type: "Convolution" bottom: "cell" top: "loc"
        convolution_param { num_output: 4 kernel_size: 1 } }
layer { name: "conf" type: "Convolution" bottom: "cell" top: "conf"
        convolution_param { num_output: 3 kernel_size: 1 } }
layer { name: "prob" type: "Softmax" bottom: "conf" top: "prob" }
layer { name: "priors" type: "PriorBox" bottom: "cell" bottom: "data" top: "priors"
        prior_box_param { min_size: 16 } }
layer { name: "detection" type: "DetectionOutput" bottom: "loc" bottom: "prob"
        bottom: "priors" top: "detection"
        detection_output_param { num_classes: 3 confidence_threshold: 0.05
                                 nms_param { nms_threshold: 0.45 } } }
)";
}

// Writes the deploy and weights: every convolution's weights 0, its biases
// as given.
TinyModel write_detector(const TempDir& dir, const std::string& deploy,
                         const std::map<std::string, std::vector<float>>& biases) {
  TinyModel model;
  model.deploy = dir.write("deploy.prototxt", deploy);
  NetOptions options;
  options.verbose = false;
  Net net(model.deploy, TEST, 0, {}, options);
  for (const auto& [layer, values] : biases) {
    Blob& weight = *net.layer_by_name(layer)->blobs()[0];
    Blob& bias = *net.layer_by_name(layer)->blobs()[1];
    std::fill(weight.mutable_cpu_data(), weight.mutable_cpu_data() + weight.count(), 0.0f);
    EXPECT_EQ(bias.count(), values.size()) << layer;
    std::copy(values.begin(), values.end(), bias.mutable_cpu_data());
  }
  NetParameter trained;
  net.to_proto(&trained);
  model.weights = dir.file("detector.caffemodel");
  write_proto_to_binary_file(trained, model.weights);
  return model;
}

struct DetectFixture {
  TempDir dir{"detect_cli"};
  TinyModel yolo = write_detector(dir, yolo_deploy(), {{"pred", kYoloBiases}});
  // A grey 40 x 40 image: stretched to 64 x 32, the box covers x 15..25,
  // y 10..30 of it; letterboxed it is placed as 32 x 32 at x = 16, so the
  // box's 24..40 x 8..24 of the input are 10..30 x 10..30 of the image.
  std::string square =
      write_png(dir, "square.png", 3, 40, 40, std::vector<std::uint8_t>(4800, 100));
  std::string label_map = dir.write("labelmap.prototxt",
                                    "item { name: \"background\" label: 0 }\n"
                                    "item { name: \"shirt\" label: 1 display_name: \"T-shirt\" }\n"
                                    "item { name: \"bag\" label: 2 }\n");

  std::string command(const TinyModel& model, const std::string& flags,
                      const std::string& images) const {
    return tool_path("xtrain") + " detect --model=" + model.deploy + " --weights=" + model.weights +
           " " + flags + " " + images;
  }
};

TEST(DetectCli, PrintsTheYoloBoxesInThePixelsOfTheImage) {
  DetectFixture fixture;
  ToolResult result = run_tool(fixture.command(fixture.yolo, "", fixture.square));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // The default --confidence=0.25 leaves out label 2 (0.16).
  EXPECT_CONTAINS(result.output, fixture.square + " 1 0.8000 15.0 10.0 25.0 30.0\n");
  EXPECT_EQ(result.output.find(fixture.square + " 2 "), std::string::npos) << result.output;

  result = run_tool(fixture.command(
      fixture.yolo, "--confidence=0.1 --label_map=" + fixture.label_map, fixture.square));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, fixture.square + " T-shirt 0.8000 15.0 10.0 25.0 30.0\n" +
                                     fixture.square + " bag 0.1600 15.0 10.0 25.0 30.0\n");
}

TEST(DetectCli, LetterboxIsUndone) {
  DetectFixture fixture;
  const ToolResult result = run_tool(fixture.command(fixture.yolo, "--letterbox", fixture.square));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, fixture.square + " 1 0.8000 10.0 10.0 30.0 30.0\n");
}

TEST(DetectCli, ReadsSsdDetectionOutputToo) {
  DetectFixture fixture;
  const TinyModel ssd = write_detector(fixture.dir, ssd_deploy(),
                                       {{"loc", {0, 0, 0, 0}}, {"conf", {0, 2.0794415f, 0}}});
  const ToolResult result =
      run_tool(fixture.command(ssd, "--label_map=" + fixture.label_map, fixture.square));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_CONTAINS(result.output, fixture.square + " T-shirt 0.8000 15.0 10.0 25.0 30.0\n");
  EXPECT_EQ(result.output.find(" bag "), std::string::npos) << result.output;
}

TEST(DetectCli, DrawWritesACopyOfEachImageWithItsBoxes) {
  DetectFixture fixture;
  const std::string wide =
      write_png(fixture.dir, "wide.png", 3, 20, 60, std::vector<std::uint8_t>(3600, 100));
  const std::string out = fixture.dir.file("drawn.png");
  ToolResult result = run_tool(fixture.command(fixture.yolo, "--draw=" + out, fixture.square));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  Image drawn = read_image_file(out, ColorMode::kColor);
  EXPECT_EQ(drawn.width, 40);
  EXPECT_EQ(drawn.height, 40);
  // The box's bottom edge (y = 30) at x = 20 is drawn over the grey.
  const std::size_t plane = 40 * 40;
  const std::size_t at = 30 * 40 + 20;
  EXPECT_FALSE(drawn.pixels[at] == 100 && drawn.pixels[plane + at] == 100 &&
               drawn.pixels[2 * plane + at] == 100);

  // Several images: numbered copies, each of its image's size.
  result = run_tool(fixture.command(fixture.yolo, "--draw=" + out, fixture.square + " " + wide));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  drawn = read_image_file(fixture.dir.file("drawn_2.png"), ColorMode::kColor);
  EXPECT_EQ(drawn.width, 60);
  EXPECT_EQ(drawn.height, 20);
  EXPECT_EQ(read_image_file(fixture.dir.file("drawn_1.png"), ColorMode::kColor).width, 40);
}

TEST(DetectCli, ErrorsNameTheFile) {
  DetectFixture fixture;
  std::string line = expect_one_line_error(
      run_tool(fixture.command(fixture.yolo, "", fixture.dir.file("none.png"))), "xtrain detect");
  EXPECT_CONTAINS(line, fixture.dir.file("none.png"));

  const std::string damaged = fixture.dir.write("damaged.png", "no pixels here");
  line =
      expect_one_line_error(run_tool(fixture.command(fixture.yolo, "", damaged)), "xtrain detect");
  EXPECT_CONTAINS(line, damaged);

  line = expect_one_line_error(
      run_tool(tool_path("xtrain") + " detect --model=/no/such/deploy.prototxt --weights=" +
               fixture.yolo.weights + " " + fixture.square),
      "xtrain detect");
  EXPECT_CONTAINS(line, "/no/such/deploy.prototxt");

  line = expect_one_line_error(
      run_tool(
          fixture.command(fixture.yolo, "--label_map=/no/such/labelmap.prototxt", fixture.square)),
      "xtrain detect");
  EXPECT_CONTAINS(line, "/no/such/labelmap.prototxt");

  line = expect_one_line_error(
      run_tool(fixture.command(fixture.yolo, "--draw=/no/such/folder/out.png", fixture.square)),
      "xtrain detect");
  EXPECT_CONTAINS(line, "/no/such/folder/out.png");
}

TEST(DetectCli, ErrorsSayWhatIsMissing) {
  DetectFixture fixture;
  TempDir classifier_dir("detect_cli_classifier");
  const TinyModel classifier = write_tiny_model(classifier_dir, 3, {0, 1, 2});
  std::string line = expect_one_line_error(
      run_tool(fixture.command(classifier, "", fixture.square)), "xtrain detect");
  EXPECT_CONTAINS(line, "no DetectionOutput or YoloDetectionOutput layer");
  EXPECT_CONTAINS(line, classifier.deploy);

  line = expect_one_line_error(run_tool(tool_path("xtrain") + " detect --model=" +
                                        fixture.yolo.deploy + " " + fixture.square),
                               "xtrain detect");
  EXPECT_CONTAINS(line, "--weights");

  line = expect_one_line_error(run_tool(fixture.command(fixture.yolo, "", "")), "xtrain detect");
  EXPECT_CONTAINS(line, "image files");
}

TEST(DetectCli, HelpListsTheCommandAndItsFlags) {
  EXPECT_CONTAINS(run_tool(tool_path("xtrain") + " --help").output, "detect");
  const ToolResult result = run_tool(tool_path("xtrain") + " detect --help");
  for (const char* flag : {"--label_map=", "--confidence=", "--letterbox",
                           "--pad_value=", "--draw=", "--mean_values=", "--scale="}) {
    EXPECT_CONTAINS(result.output, flag);
  }
}

}  // namespace
}  // namespace xtrain::testing

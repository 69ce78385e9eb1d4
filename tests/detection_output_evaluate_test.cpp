// DetectionOutput and DetectionEvaluate by hand: decoding, per-class NMS,
// the confidence threshold, keep_top_k, Caffe's row of -1s when nothing is
// detected; true and false positives, duplicates, difficult boxes and the
// per-class positives rows.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "tool_runner.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;
using testing::set_data;

// Three priors, variance 1, zero offsets: the boxes are the priors. p0 and
// p1 overlap by 0.9, p2 is apart.
class DetectionOutputExample : public ::testing::Test {
 protected:
  DetectionOutputExample() : loc({1, 12}), conf({1, 9}), priors({1, 2, 12}) {
    set_data(priors, {0, 0, 0.5f, 0.5f, 0, 0, 0.5f, 0.45f, 0.5f, 0.5f, 1, 1,  //
                      1, 1, 1,    1,    1, 1, 1,    1,     1,    1,    1, 1});
    // Probabilities per prior over (background, class 1, class 2).
    set_data(conf, {0.1f, 0.8f, 0.1f, 0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f});
  }

  std::vector<float> detect(const std::string& settings) {
    Blob top;
    auto layer = make_layer(
        "name: 'det' type: 'DetectionOutput' detection_output_param { num_classes: 3 "
        "nms_param { nms_threshold: 0.45 } " +
        settings + " }");
    layer->setup({&loc, &conf, &priors}, {&top});
    layer->forward({&loc, &conf, &priors}, {&top});
    EXPECT_EQ(top.num_axes(), 4);
    EXPECT_EQ(top.shape(3), 7);
    return data_of(top);
  }

  Blob loc, conf, priors;
};

XTRAIN_DEVICE_TEST_F(DetectionOutputExample, PerClassNmsAboveTheConfidenceThreshold) {
  // Class 1: p0 (0.8) suppresses p1 (0.7); p2 (0.3) stays. Class 2: p2
  // (0.4) and p1 (0.2); p0's 0.1 is below the threshold.
  EXPECT_EQ(detect("confidence_threshold: 0.15"),
            (std::vector<float>{0, 1, 0.8f, 0,    0,    0.5f, 0.5f,  //
                                0, 1, 0.3f, 0.5f, 0.5f, 1,    1,     //
                                0, 2, 0.4f, 0.5f, 0.5f, 1,    1,     //
                                0, 2, 0.2f, 0,    0,    0.5f, 0.45f}));
}

XTRAIN_DEVICE_TEST_F(DetectionOutputExample, KeepTopKKeepsTheBestOverAllClasses) {
  EXPECT_EQ(detect("confidence_threshold: 0.15 keep_top_k: 2"),
            (std::vector<float>{0, 1, 0.8f, 0, 0, 0.5f, 0.5f,  //
                                0, 2, 0.4f, 0.5f, 0.5f, 1, 1}));
}

XTRAIN_DEVICE_TEST_F(DetectionOutputExample, NothingDetectedIsOneRowOfMinusOnesPerItem) {
  loc.reshape({2, 12});
  conf.reshape({2, 9});
  set_data(conf, std::vector<float>(18, 0.1f));
  std::vector<float> expected(14, -1.0f);
  expected[0] = 0;
  expected[7] = 1;
  EXPECT_EQ(detect("confidence_threshold: 0.5"), expected);
}

XTRAIN_DEVICE_TEST_F(DetectionOutputExample, DecodesTheOffsetsAgainstThePriors) {
  // CORNER with variance 1: p2 moved by (-0.1, -0.1, 0, 0).
  set_data(loc, {0, 0, 0, 0, 0, 0, 0, 0, -0.1f, -0.1f, 0, 0});
  const std::vector<float> out = detect("confidence_threshold: 0.35");
  testing::expect_near_all(out,
                           {0, 1, 0.8f, 0, 0, 0.5f, 0.5f,  //
                            0, 2, 0.4f, 0.4f, 0.4f, 1, 1},
                           1e-6f);
}

// Detections of item 0: two of class 1 on its one box (the second is a
// duplicate), one of class 2 where there is no box of class 2; item 1: one
// of class 1 on a difficult box.
class DetectionEvaluateExample : public ::testing::Test {
 protected:
  DetectionEvaluateExample() : detections({1, 1, 4, 7}), truth({1, 1, 2, 8}) {
    set_data(detections, {0, 1, 0.9f, 0.1f,  0.1f, 0.5f, 0.5f,  //
                          0, 1, 0.8f, 0.12f, 0.1f, 0.5f, 0.5f,  //
                          0, 2, 0.7f, 0.1f,  0.1f, 0.5f, 0.5f,  //
                          1, 1, 0.6f, 0.5f,  0.5f, 0.9f, 0.9f});
    set_data(truth, {0, 1, 0, 0.1f, 0.1f, 0.5f, 0.5f, 0,  //
                     1, 1, 0, 0.5f, 0.5f, 0.9f, 0.9f, 1});
  }

  std::vector<float> evaluate(const std::string& settings) {
    Blob top;
    auto layer = make_layer(
        "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 3 " +
        settings + " }");
    layer->setup({&detections, &truth}, {&top});
    layer->forward({&detections, &truth}, {&top});
    EXPECT_EQ(top.shape(), (std::vector<int>{1, 1, static_cast<int>(top.count() / 5), 5}));
    return data_of(top);
  }

  Blob detections, truth;
};

XTRAIN_DEVICE_TEST_F(DetectionEvaluateExample, DifficultBoxesNotEvaluated) {
  EXPECT_EQ(evaluate("evaluate_difficult_gt: false"),
            (std::vector<float>{-1, 1, 1,    -1, -1,    // one non-difficult box of class 1
                                -1, 2, 0,    -1, -1,    //
                                0,  1, 0.9f, 1,  0,     // the hit
                                0,  1, 0.8f, 0,  1,     // the duplicate
                                0,  2, 0.7f, 0,  1,     // no box of class 2
                                1,  1, 0.6f, 0,  0}));  // on a difficult box: neither
}

XTRAIN_DEVICE_TEST_F(DetectionEvaluateExample, DifficultBoxesEvaluated) {
  const std::vector<float> out = evaluate("");
  EXPECT_EQ(out[2], 2);  // both boxes of class 1 count
  EXPECT_EQ(std::vector<float>(out.begin() + 25, out.end()),
            (std::vector<float>{1, 1, 0.6f, 1, 0}));
}

XTRAIN_DEVICE_TEST_F(DetectionEvaluateExample, AHigherOverlapThresholdMissesLooseBoxes) {
  // The duplicate's box (0.12, ...) overlaps the truth by 0.95; the hit by
  // 1. At 0.97 only the exact one counts, and it takes the box first.
  const std::vector<float> out = evaluate("overlap_threshold: 0.97");
  EXPECT_EQ(std::vector<float>(out.begin() + 10, out.begin() + 20),
            (std::vector<float>{0, 1, 0.9f, 1, 0, 0, 1, 0.8f, 0, 1}));
}

// One detection (score 0.9) and one truth box (not difficult) of class 1 in
// image 0, each (xmin, ymin, xmax, ymax), and a name_size_file that makes image "000001"
// `height` x `width` pixels.
struct OneBoxInASizedImage {
  OneBoxInASizedImage(const std::vector<float>& detection_box, const std::vector<float>& truth_box,
                      int height, int width)
      : detections({1, 1, 1, 7}),
        truth({1, 1, 1, 8}),
        dir("name_size"),
        sizes(dir.path() + "/name_size.txt") {
    std::vector<float> detection = {0, 1, 0.9f};
    detection.insert(detection.end(), detection_box.begin(), detection_box.end());
    set_data(detections, detection);
    std::vector<float> truth_entry = {0, 1, 0};  // image 0, class 1, instance 0
    truth_entry.insert(truth_entry.end(), truth_box.begin(), truth_box.end());
    truth_entry.push_back(0);  // not difficult
    set_data(truth, truth_entry);
    std::ofstream(sizes) << "000001 " << height << " " << width << "\n";
  }

  Blob detections;
  Blob truth;
  testing::TempDir dir;
  const std::string sizes;
};

XTRAIN_DEVICE_TEST(DetectionEvaluateLayerTest, NameSizeFileComparesInImagePixels) {
  // A 1 x 1 % box and a detection on its right half. Normalized: IoU 0.5. In
  // the 100 x 100 pixels of the file, counting both end pixels: the box is
  // 2 x 2, the detection 1.5 x 2, IoU 0.75. At a threshold of 0.6 only the
  // pixel comparison makes it a hit.
  OneBoxInASizedImage example({0.005f, 0, 0.01f, 0.01f}, {0, 0, 0.01f, 0.01f}, 100, 100);
  Blob& detections = example.detections;
  Blob& truth = example.truth;
  const std::string& sizes = example.sizes;
  for (const auto& [file, hit] : std::vector<std::pair<std::string, float>>{{"", 0}, {sizes, 1}}) {
    Blob top;
    auto layer = make_layer(
        "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 2 "
        "overlap_threshold: 0.6 " +
        (file.empty() ? std::string() : "name_size_file: '" + file + "'") + " }");
    layer->setup({&detections, &truth}, {&top});
    layer->forward({&detections, &truth}, {&top});
    EXPECT_EQ(data_of(top), (std::vector<float>{-1, 1, 1, -1, -1, 0, 1, 0.9f, hit, 1 - hit}))
        << (file.empty() ? "normalized" : "pixels");
  }
  auto missing = make_layer(
      "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 2 "
      "name_size_file: '" +
      example.dir.path() + "/none.txt' }");
  Blob top;
  testing::expect_setup_error(*missing, {&detections, &truth}, {&top},
                              {"'eval'", "name_size_file", "none.txt"});
}

XTRAIN_DEVICE_TEST(DetectionEvaluateLayerTest, ResizeParamMapsBoxesBackThroughTheLetterbox) {
  // A 200 x 100 image letterboxed onto 100 x 100: scale 0.5, 100 x 50 at
  // top 25, the frame (0, 0.25, 1, 0.75). The truth, image (0, 0, 0.1,
  // 0.2), is (0, 0.25, 0.1, 0.35) there; the detection (0, 0.15, 0.1, 0.35)
  // reaches 10 rows into the padding. Mapped back and clipped it is the
  // truth (IoU 1); compared in the padded frame's pixels (0, 15, 20, 35)
  // against (0, 25, 20, 35), IoU is 21 * 11 / (21 * 21) = 0.52 < 0.6: WARP,
  // which leaves normalized boxes as they are, misses.
  OneBoxInASizedImage example({0, 0.15f, 0.1f, 0.35f}, {0, 0.25f, 0.1f, 0.35f}, 100, 200);
  Blob& detections = example.detections;
  Blob& truth = example.truth;
  const std::string& sizes = example.sizes;
  const auto evaluate = [&](const std::string& resize) {
    Blob top;
    auto layer = make_layer(
        "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 2 "
        "overlap_threshold: 0.6 name_size_file: '" +
        sizes + "' resize_param { " + resize + " } }");
    layer->setup({&detections, &truth}, {&top});
    layer->forward({&detections, &truth}, {&top});
    return data_of(top);
  };
  EXPECT_EQ(evaluate("resize_mode: FIT_LARGE_SIZE_AND_PAD height: 100 width: 100"),
            (std::vector<float>{-1, 1, 1, -1, -1, 0, 1, 0.9f, 1, 0}));
  EXPECT_EQ(evaluate("resize_mode: WARP height: 100 width: 100"),
            (std::vector<float>{-1, 1, 1, -1, -1, 0, 1, 0.9f, 0, 1}));

  Blob top;
  const auto setup_error = [&](const std::string& settings) {
    auto layer = make_layer(
        "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 2 " +
        settings + " }");
    layer->setup({&detections, &truth}, {&top});
  };
  testing::expect_error([&] { setup_error("resize_param { height: 10 width: 10 }"); },
                        {"'eval'", "name_size_file"});
  testing::expect_error(
      [&] {
        setup_error("name_size_file: '" + sizes +
                    "' resize_param { resize_mode: FIT_SMALL_SIZE height: 10 width: 10 }");
      },
      {"'eval'", "FIT_SMALL_SIZE"});
  testing::expect_error(
      [&] {
        setup_error("name_size_file: '" + sizes +
                    "' resize_param { resize_mode: FIT_LARGE_SIZE_AND_PAD }");
      },
      {"'eval'", "height and width"});
}

}  // namespace
}  // namespace xtrain

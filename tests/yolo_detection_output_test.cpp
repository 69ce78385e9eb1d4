// YoloDetectionOutput by hand: Darknet's box decoding over two scales with
// known logits, the confidence threshold (>=), per-class NMS, keep_top_k,
// DetectionOutput's "no detection" rows, a perfect prediction scored by
// DetectionEvaluate at AP 1, and the errors of bad settings.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "layers/average_precision.hpp"

namespace xtrain {
namespace {

using testing::data_of;
using testing::make_layer;
using testing::set_data;

constexpr int kEntries = 5 + 2;  // tx, ty, tw, th, objectness, 2 classes
constexpr float kOff = -20;      // σ(-20) ~ 2e-9: no object, no class

// Anchors (8, 16), (16, 8), (4, 4) in a 64 x 32 (w x h) input. Scale A is
// 2 x 1 cells with anchor 1, scale B 2 x 2 cells with anchors 0 and 2.
//   box A: scale A, cell (i 1, j 0), anchor (16, 8), all offsets 0:
//          centre (1.5 / 2, 0.5 / 1), size (16 / 64, 8 / 32)
//          = (0.625, 0.375, 0.875, 0.625); objectness σ(0) = 0.5,
//          class 0 σ(20) = 1, class 1 σ(0) = 0.5: scores 0.5 and 0.25
//   box B: scale B, cell (i 0, j 1), anchor (8, 16), tx = ln 3 (σ = 0.75),
//          tw = ln 2: centre (0.75 / 2, 1.5 / 2), size (2 * 8 / 64, 16 / 32)
//          = (0.25, 0.5, 0.5, 1); objectness σ(ln 4) = 0.8, class 1 only: 0.8
class YoloDetectionOutputExample : public ::testing::Test {
 protected:
  YoloDetectionOutputExample()
      : scale_a({1, kEntries, 1, 2}), scale_b({1, 2 * kEntries, 2, 2}), data({1, 3, 32, 64}) {
    set_data(scale_a, std::vector<float>(scale_a.count(), kOff));
    set_data(scale_b, std::vector<float>(scale_b.count(), kOff));
    set_cell(scale_a, 0, 0, 1, {0, 0, 0, 0, 0, 20, 0});
    set_cell(scale_b, 0, 1, 0, {std::log(3.0f), 0, std::log(2.0f), 0, std::log(4.0f), kOff, 20});
  }

  // The 7 entries of `anchor` at cell (row j, column i) of item 0.
  static void set_cell(Blob& scale, int anchor, int j, int i, const std::vector<float>& entries) {
    float* data = scale.mutable_cpu_data();
    const int plane = scale.height() * scale.width();
    for (int e = 0; e < kEntries; ++e) {
      data[(anchor * kEntries + e) * plane + j * scale.width() + i] = entries[e];
    }
  }

  static std::string param(const std::string& settings) {
    return "name: 'yolo' type: 'YoloDetectionOutput' yolo_param { num_classes: 2 anchors: 8 "
           "anchors: 16 anchors: 16 anchors: 8 anchors: 4 anchors: 4 mask: 1 mask: 0 mask: 2 " +
           settings + " }";
  }

  std::vector<float> detect(const std::string& settings, BlobVec bottom = {}) {
    if (bottom.empty()) bottom = {&scale_a, &scale_b, &data};
    Blob top;
    auto layer = make_layer(param(settings));
    layer->setup(bottom, {&top});
    layer->forward(bottom, {&top});
    EXPECT_EQ(top.num_axes(), 4);
    EXPECT_EQ(top.shape(0), 1);
    EXPECT_EQ(top.shape(1), 1);
    EXPECT_EQ(top.shape(3), 7);
    return data_of(top);
  }

  Blob scale_a, scale_b, data;
};

const std::vector<float> kBoxA = {0.625f, 0.375f, 0.875f, 0.625f};
const std::vector<float> kBoxB = {0.25f, 0.5f, 0.5f, 1};

// (item, label, score) followed by a box.
std::vector<float> row(float item, float label, float score, const std::vector<float>& box) {
  std::vector<float> r = {item, label, score};
  r.insert(r.end(), box.begin(), box.end());
  return r;
}

std::vector<float> rows(const std::vector<std::vector<float>>& list) {
  std::vector<float> all;
  for (const auto& r : list) all.insert(all.end(), r.begin(), r.end());
  return all;
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, DecodesBothScalesIntoLabelledRows) {
  // Labels are classes + 1 (first_class_label), ascending; within a label
  // by descending score.
  testing::expect_near_all(
      detect("confidence_threshold: 0.2"),
      rows({row(0, 1, 0.5f, kBoxA), row(0, 2, 0.8f, kBoxB), row(0, 2, 0.25f, kBoxA)}), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, GivenInputSizeReplacesTheDataBottom) {
  testing::expect_near_all(
      detect("confidence_threshold: 0.2 img_h: 32 img_w: 64 first_class_label: 0",
             {&scale_a, &scale_b}),
      rows({row(0, 0, 0.5f, kBoxA), row(0, 1, 0.8f, kBoxB), row(0, 1, 0.25f, kBoxA)}), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, KeepsScoresThatReachTheThreshold) {
  // σ(0) σ(0) = 0.25 exactly: kept at 0.25, dropped just above it.
  EXPECT_EQ(detect("confidence_threshold: 0.25").size(), 3u * 7);
  testing::expect_near_all(detect("confidence_threshold: 0.2500001"),
                           rows({row(0, 1, 0.5f, kBoxA), row(0, 2, 0.8f, kBoxB)}), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, SuppressesOverlapsWithinAClassOnly) {
  // Anchor (4, 4) at box B's cell with tw = th = ln 4 predicts box B again,
  // at 0.5 for both classes. Class 1's copy overlaps B (0.8) fully and goes;
  // class 0 has no other box there and keeps it.
  set_cell(scale_b, 1, 1, 0, {std::log(3.0f), 0, std::log(4.0f), std::log(4.0f), 0, 20, 20});
  testing::expect_near_all(detect("confidence_threshold: 0.2 nms_param { nms_threshold: 0.45 }"),
                           rows({row(0, 1, 0.5f, kBoxA), row(0, 1, 0.5f, kBoxB),
                                 row(0, 2, 0.8f, kBoxB), row(0, 2, 0.25f, kBoxA)}),
                           1e-6f);
  // At threshold 1 no overlap exceeds it: both copies stay.
  EXPECT_EQ(detect("confidence_threshold: 0.2 nms_param { nms_threshold: 1 }").size(), 5u * 7);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, KeepTopKKeepsTheBestOverAllClasses) {
  testing::expect_near_all(detect("confidence_threshold: 0.2 keep_top_k: 2"),
                           rows({row(0, 1, 0.5f, kBoxA), row(0, 2, 0.8f, kBoxB)}), 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, NothingDetectedIsOneRowOfMinusOnesPerItem) {
  // As DetectionOutput: (item, -1, -1, -1, -1, -1, -1) for each item.
  for (Blob* blob : {&scale_a, &scale_b, &data}) {
    blob->reshape({2, blob->channels(), blob->height(), blob->width()});
    set_data(*blob, std::vector<float>(blob->count(), kOff));
  }
  std::vector<float> expected(14, -1.0f);
  expected[0] = 0;
  expected[7] = 1;
  EXPECT_EQ(detect("confidence_threshold: 0.1"), expected);
}

XTRAIN_DEVICE_TEST_F(YoloDetectionOutputExample, PerfectPredictionsScoreAnAveragePrecisionOfOne) {
  // DetectionEvaluate (background 0, classes 1 and 2) reads the rows as it
  // reads DetectionOutput's: both boxes are hits, mAP 1.
  Blob detections;
  const BlobVec bottom = {&scale_a, &scale_b, &data};
  auto layer = make_layer(param("confidence_threshold: 0.3"));
  layer->setup(bottom, {&detections});
  layer->forward(bottom, {&detections});
  Blob truth({1, 1, 2, 8});
  set_data(truth, {0, 1, 0, 0.625f, 0.375f, 0.875f, 0.625f, 0,  //
                   0, 2, 0, 0.25f, 0.5f, 0.5f, 1, 0});
  Blob evaluated;
  auto evaluate = make_layer(
      "name: 'eval' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 3 "
      "overlap_threshold: 0.9 }");
  evaluate->setup({&detections, &truth}, {&evaluated});
  evaluate->forward({&detections, &truth}, {&evaluated});
  EXPECT_EQ(data_of(evaluated), (std::vector<float>{-1, 1, 1,    -1, -1,  //
                                                    -1, 2, 1,    -1, -1,  //
                                                    0,  1, 0.5f, 1,  0,   //
                                                    0,  2, 0.8f, 1,  0}));
  detection::DetectionEvaluation evaluation;
  evaluation.add_rows(evaluated.cpu_data(), evaluated.shape(2));
  EXPECT_FLOAT_EQ(evaluation.mean_average_precision(detection::ApVersion::k11Point), 1.0f);
}

XTRAIN_DEVICE_TEST(YoloDetectionOutputLayerTest, OneScaleWithoutAMaskUsesEveryAnchor) {
  // Three anchors on a 1 x 1 grid; only the third, (4, 4), sees an object.
  Blob scale({1, 3 * kEntries, 1, 1});
  std::vector<float> values(scale.count(), kOff);
  for (int e = 0; e < kEntries; ++e) values[2 * kEntries + e] = e < 4 ? 0.0f : 20.0f;
  set_data(scale, values);
  Blob top;
  auto layer = make_layer(
      "name: 'yolo' type: 'YoloDetectionOutput' yolo_param { num_classes: 2 anchors: 8 "
      "anchors: 16 anchors: 16 anchors: 8 anchors: 4 anchors: 4 img_h: 32 img_w: 64 }");
  layer->setup({&scale}, {&top});
  layer->forward({&scale}, {&top});
  // Centre (0.5, 0.5), size (4 / 64, 4 / 32).
  testing::expect_near_all(data_of(top),
                           rows({row(0, 1, 1, {0.46875f, 0.4375f, 0.53125f, 0.5625f}),
                                 row(0, 2, 1, {0.46875f, 0.4375f, 0.53125f, 0.5625f})}),
                           1e-6f);
}

// A setting or bottom that does not fit: the error names the layer and the
// setting to change.
struct BadYoloCase {
  std::string name;
  std::string settings;  // inside yolo_param
  std::vector<std::vector<int>> bottoms;
  std::vector<std::string> message;
};

void PrintTo(const BadYoloCase& c, std::ostream* out) { *out << c.name; }

class YoloDetectionOutputBadSettings : public ::testing::TestWithParam<BadYoloCase> {};

TEST_P(YoloDetectionOutputBadSettings, ThrowsAnErrorNamingTheSetting) {
  const BadYoloCase& c = GetParam();
  std::vector<std::unique_ptr<Blob>> blobs;
  BlobVec bottom;
  for (const auto& shape : c.bottoms) {
    blobs.push_back(std::make_unique<Blob>(shape));
    bottom.push_back(blobs.back().get());
  }
  Blob top;
  testing::expect_error(
      [&] {
        auto layer = make_layer("name: 'yolo' type: 'YoloDetectionOutput' yolo_param { " +
                                c.settings + " }");
        layer->setup(bottom, {&top});
      },
      c.message);
}

const std::string kAnchors = "anchors: 8 anchors: 16 anchors: 16 anchors: 8 ";
const std::vector<std::vector<int>> kTwoScales = {{1, 7, 1, 2}, {1, 7, 2, 2}, {1, 3, 32, 64}};

INSTANTIATE_TEST_SUITE_P(
    Settings, YoloDetectionOutputBadSettings,
    ::testing::Values(BadYoloCase{"NoClasses",
                                  kAnchors + "mask: 0 mask: 1",
                                  kTwoScales,
                                  {"'yolo'", "num_classes"}},
                      BadYoloCase{"OddAnchors",
                                  "num_classes: 2 anchors: 8 anchors: 16 anchors: 16 mask: 0",
                                  kTwoScales,
                                  {"'yolo'", "3 anchors values", "width, height pair"}},
                      BadYoloCase{"MaskBeyondTheAnchors",
                                  "num_classes: 2 " + kAnchors + "mask: 0 mask: 2",
                                  kTwoScales,
                                  {"'yolo'", "mask value 2 is 2", "2 anchors"}},
                      BadYoloCase{"MaskMissing",
                                  "num_classes: 2 " + kAnchors,
                                  kTwoScales,
                                  {"'yolo'", "2 prediction bottoms", "no yolo_param mask"}},
                      BadYoloCase{"MaskCountDiffers",
                                  "num_classes: 2 " + kAnchors + "mask: 0",
                                  kTwoScales,
                                  {"'yolo'", "hold 2 anchors (1, 1", "mask names 1"}},
                      BadYoloCase{"ChannelsNotAnchorsTimesEntries",
                                  "num_classes: 3 " + kAnchors + "mask: 0 mask: 1",
                                  kTwoScales,
                                  {"'yolo'", "bottom 0 has 7 channels", "5 + num_classes = 8"}},
                      BadYoloCase{"OnlyImgH",
                                  "num_classes: 2 " + kAnchors + "mask: 0 mask: 1 img_h: 32",
                                  kTwoScales,
                                  {"'yolo'", "both yolo_param img_h and img_w"}},
                      BadYoloCase{"DataOnly",
                                  "num_classes: 2 " + kAnchors + "mask: 0",
                                  {{1, 3, 32, 64}},
                                  {"'yolo'", "prediction blob of each scale"}},
                      BadYoloCase{"DataNotAnImage",
                                  "num_classes: 2 " + kAnchors + "mask: 0 mask: 1",
                                  {{1, 7, 1, 2}, {1, 7, 2, 2}, {1, 64}},
                                  {"'yolo'", "the data blob, has shape", "img_h and img_w"}},
                      BadYoloCase{"BatchesDiffer",
                                  "num_classes: 2 " + kAnchors + "mask: 0 mask: 1",
                                  {{1, 7, 1, 2}, {2, 7, 2, 2}, {1, 3, 32, 64}},
                                  {"'yolo'", "prediction bottom 1 holds 2 images"}},
                      BadYoloCase{"NegativeNmsThreshold",
                                  "num_classes: 2 " + kAnchors +
                                      "mask: 0 mask: 1 nms_param { nms_threshold: -1 }",
                                  kTwoScales,
                                  {"'yolo'", "nms_threshold"}}),
    [](const ::testing::TestParamInfo<BadYoloCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace xtrain

// YoloLoss: one image of a 2 x 2 grid, 2 anchors and 2 classes with one true
// box, every target worked out by hand; Darknet's ignore_thresh and
// truth_thresh rules; a box whose best anchor belongs to another scale; two
// boxes in one cell; images without boxes; the image size from the data;
// gradients against finite differences; and bad settings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "layers/yolo_ops.hpp"

namespace xtrain {
namespace {

using namespace testing;

float sigmoid(float z) { return 1 / (1 + std::exp(-z)); }
// The cross-entropy of logit z against target t: softplus(z) - t z.
float bce(float z, float t) { return std::log1p(std::exp(z)) - t * z; }

const float kLn2 = std::log(2.0f);

// An 8 x 8 pixel input, a 2 x 2 grid: anchor 0 is 2 x 2 pixels (0.25 of the
// image), anchor 1 is 6 x 4 (0.75 x 0.5); classes 0 and 1 are labels 1 and 2.
std::string yolo_layer(const std::string& extra = "",
                       const std::string& anchors = "anchors: [2, 2, 6, 4]") {
  return "name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 2 " + anchors +
         " mask: [0, 1] img_h: 8 img_w: 8 " + extra + " }";
}

// Channel (a * 7 + entry), cell (j, i) of a 1 x 14 x 2 x 2 blob.
std::size_t at(int anchor, int entry, int j, int i) {
  return ((static_cast<std::size_t>(anchor) * 7 + entry) * 2 + j) * 2 + i;
}

class YoloLossHandExample : public ::testing::Test {
 protected:
  YoloLossHandExample() : predictions({1, 14, 2, 2}) {
    // The true box: class 1 (label 2), corners (0.5, 0.125) - (1, 0.625),
    // so centre (0.75, 0.375), size 0.5 x 0.5: cell i = 1, j = 0. Its shape
    // overlaps anchor 0 by 0.0625 / 0.25 = 0.25 and anchor 1 by
    // 0.25 / 0.375 = 2/3: anchor 1 takes it.
    truth.reshape({1, 1, 1, 8});
    set_data(truth, {0, 2, 0, 0.5f, 0.125f, 1, 0.625f, 0});
    // Every raw output 0 except the box's prediction (anchor 1, j 0, i 1).
    std::vector<float> z(predictions.count(), 0.0f);
    z[at(1, 0, 0, 1)] = 1;     // tx
    z[at(1, 4, 0, 1)] = 1;     // objectness
    z[at(1, 5, 0, 1)] = 0.5f;  // class 0
    z[at(1, 6, 0, 1)] = -1;    // class 1
    set_data(predictions, z);
  }

  float run(const std::string& prototxt) {
    layer = make_layer(prototxt);
    layer->setup({&predictions, &truth}, {&top});
    layer->forward({&predictions, &truth}, {&top});
    set_diff(top, {1.0f});
    layer->backward({&top}, {true, false}, {&predictions, &truth});
    return data_of(top)[0];
  }

  // The box's prediction trained as the box: its loss and gradient.
  static constexpr float kScale = 2 - 0.5f * 0.5f;
  const float tx_target = 0.75f * 2 - 1;
  const float ty_target = 0.375f * 2 - 0;
  const float tw_target = std::log(0.5f / 0.75f);
  const float th_target = std::log(0.5f / 0.5f);
  float box_prediction_loss() const {
    return bce(1, 1) + bce(0.5f, 0) + bce(-1, 1) +
           kScale * (bce(1, tx_target) + bce(0, ty_target)) +
           0.5f * kScale * (tw_target * tw_target + th_target * th_target);
  }

  Blob predictions, truth, top;
  std::unique_ptr<Layer> layer;
};

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, LossAndGradientByHand) {
  // Seven other predictions, each "no object": softplus(0) = ln 2.
  EXPECT_NEAR(run(yolo_layer()), 7 * kLn2 + box_prediction_loss(), 1e-5f);
  std::vector<float> expected(predictions.count(), 0.0f);
  for (int a = 0; a < 2; ++a) {
    for (int cell = 0; cell < 4; ++cell) expected[at(a, 4, cell / 2, cell % 2)] = sigmoid(0);
  }
  expected[at(1, 0, 0, 1)] = kScale * (sigmoid(1) - tx_target);
  expected[at(1, 1, 0, 1)] = kScale * (sigmoid(0) - ty_target);
  expected[at(1, 2, 0, 1)] = kScale * (0 - tw_target);
  expected[at(1, 3, 0, 1)] = kScale * (0 - th_target);
  expected[at(1, 4, 0, 1)] = sigmoid(1) - 1;
  expected[at(1, 5, 0, 1)] = sigmoid(0.5f) - 0;
  expected[at(1, 6, 0, 1)] = sigmoid(-1) - 1;
  expect_near_all(diff_of(predictions), expected, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, PredictionsOverlappingABoxAboveIgnoreThreshAddNoLoss) {
  // Anchor 0 in the box's cell decodes to (0.75, 0.25) 0.25 x 0.25, inside
  // the box: overlap 0.0625 / 0.25 = 0.25. Every other prediction but the
  // box's own overlaps it by at most 1/9.
  EXPECT_NEAR(run(yolo_layer("ignore_thresh: 0.3")), 7 * kLn2 + box_prediction_loss(), 1e-5f);
  EXPECT_NEAR(run(yolo_layer("ignore_thresh: 0.2")), 6 * kLn2 + box_prediction_loss(), 1e-5f);
  EXPECT_EQ(diff_of(predictions)[at(0, 4, 0, 1)], 0.0f);
  EXPECT_NEAR(diff_of(predictions)[at(0, 4, 1, 1)], 0.5f, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, AboveTruthThreshAPredictionIsTrainedAsTheBox) {
  // Anchor 0 in the box's cell (overlap 0.25 > 0.2) learns the box with its
  // own anchor: targets 0.5, 0.75, log(0.5 / 0.25), log(0.5 / 0.25).
  const float size_target = std::log(2.0f);
  const float trained = bce(0, 1) + bce(0, 0) + bce(0, 1) +
                        kScale * (bce(0, tx_target) + bce(0, ty_target)) +
                        0.5f * kScale * 2 * size_target * size_target;
  EXPECT_NEAR(run(yolo_layer("ignore_thresh: 0.15 truth_thresh: 0.2")),
              6 * kLn2 + trained + box_prediction_loss(), 1e-5f);
  const std::vector<float> diff = diff_of(predictions);
  EXPECT_NEAR(diff[at(0, 0, 0, 1)], kScale * (0.5f - tx_target), 1e-6f);
  EXPECT_NEAR(diff[at(0, 1, 0, 1)], kScale * (0.5f - ty_target), 1e-6f);
  EXPECT_NEAR(diff[at(0, 2, 0, 1)], -kScale * size_target, 1e-6f);
  EXPECT_NEAR(diff[at(0, 3, 0, 1)], -kScale * size_target, 1e-6f);
  EXPECT_NEAR(diff[at(0, 4, 0, 1)], 0.5f - 1, 1e-6f);
  EXPECT_NEAR(diff[at(0, 5, 0, 1)], 0.5f, 1e-6f);
  EXPECT_NEAR(diff[at(0, 6, 0, 1)], 0.5f - 1, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, ABoxWhoseBestAnchorIsNotInTheMaskGivesOnlyNoObjectLoss) {
  // A third anchor of 4 x 4 pixels fits the 0.5 x 0.5 box exactly (overlap
  // 1): another scale predicts it, so here every prediction is "no object".
  EXPECT_NEAR(run(yolo_layer("", "anchors: [2, 2, 6, 4, 4, 4]")), 7 * kLn2 + bce(1, 0), 1e-5f);
  std::vector<float> expected(predictions.count(), 0.0f);
  for (int a = 0; a < 2; ++a) {
    for (int cell = 0; cell < 4; ++cell) expected[at(a, 4, cell / 2, cell % 2)] = sigmoid(0);
  }
  expected[at(1, 4, 0, 1)] = sigmoid(1);
  expect_near_all(diff_of(predictions), expected, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, ASecondBoxInTheSameCellAndAnchorAddsItsClass) {
  // Darknet's delta_yolo_class: the second box (class 0) sets only its own
  // class target; class 1's target from the first box stays.
  truth.reshape({1, 1, 2, 8});
  set_data(truth, {0, 2, 0, 0.5f, 0.125f, 1, 0.625f, 0,  //
                   0, 1, 1, 0.5f, 0.125f, 1, 0.625f, 0});
  const float two_classes = bce(0.5f, 1) + bce(-1, 1);
  EXPECT_NEAR(run(yolo_layer()),
              7 * kLn2 + box_prediction_loss() - bce(0.5f, 0) - bce(-1, 1) + two_classes, 1e-5f);
  EXPECT_NEAR(diff_of(predictions)[at(1, 5, 0, 1)], sigmoid(0.5f) - 1, 1e-6f);
  EXPECT_NEAR(diff_of(predictions)[at(1, 6, 0, 1)], sigmoid(-1) - 1, 1e-6f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, ImagesWithoutBoxesLearnNoObjectAndTheLossIsPerImage) {
  // Two images, the second all zeros and without a box: 8 "no object"
  // terms; the sum is divided by the 2 images, and so is the gradient.
  std::vector<float> z = data_of(predictions);
  z.resize(2 * z.size(), 0.0f);
  predictions.reshape({2, 14, 2, 2});
  set_data(predictions, z);
  EXPECT_NEAR(run(yolo_layer()), (7 * kLn2 + box_prediction_loss() + 8 * kLn2) / 2, 1e-5f);
  EXPECT_NEAR(diff_of(predictions)[56 + at(0, 4, 0, 0)], sigmoid(0) / 2, 1e-6f);
  EXPECT_NEAR(diff_of(predictions)[at(1, 4, 0, 1)], (sigmoid(1) - 1) / 2, 1e-6f);
  // A batch without any box: AnnotatedData's one row of -1.
  set_data(truth, {-1, -1, -1, -1, -1, -1, -1, -1});
  EXPECT_NEAR(run(yolo_layer()), (7 * kLn2 + bce(1, 0) + 8 * kLn2) / 2, 1e-5f);
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, TheImageSizeComesFromTheDataWhenNotSet) {
  Blob data({1, 3, 8, 8});
  Blob wide({1, 3, 8, 16});
  const std::string prototxt =
      "name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 2 anchors: [2, 2, 6, 4] mask: [0, "
      "1] }";
  for (Blob* image : {&data, &wide}) {
    layer = make_layer(prototxt);
    layer->setup({&predictions, &truth, image}, {&top});
    layer->forward({&predictions, &truth, image}, {&top});
    if (image == &data) {
      EXPECT_NEAR(data_of(top)[0], 7 * kLn2 + box_prediction_loss(), 1e-5f);
    }
  }
  // The data takes no gradient (it gives only its size).
  set_diff(top, {1.0f});
  set_diff(wide, std::vector<float>(wide.count(), 7.0f));
  layer->backward({&top}, {true, false, true}, {&predictions, &truth, &wide});
  EXPECT_EQ(diff_of(wide), std::vector<float>(wide.count(), 0.0f));
  // 16 pixels wide: anchor 0 is 0.125 and anchor 1 0.375 of the width; the
  // box (0.5 x 0.5) still takes anchor 1 (overlap 0.1875 / 0.25 = 0.75),
  // now with tw's target log(0.5 / 0.375).
  const float tw16 = std::log(0.5f / 0.375f);
  EXPECT_NEAR(
      data_of(top)[0],
      7 * kLn2 + box_prediction_loss() - 0.5f * kScale * (tw_target * tw_target - tw16 * tw16),
      1e-5f);
}

// Two images of a 4 x 3 grid, three anchors of which this scale predicts
// the last two, three classes (labels 1 to 3), boxes in both images.
XTRAIN_DEVICE_TEST(YoloLossLayerTest, GradientMatchesFiniteDifferences) {
  const ops::YoloLayout layout{2, 3, 3, 4};
  Blob predictions({2, 16, 3, 4});
  Blob truth({1, 1, 4, 8});
  Blob top;
  fill_uniform(predictions, 23, -1.5f, 1.5f);
  set_data(truth, {0, 1, 0, 0.1f,  0.2f,  0.5f,  0.6f,  0,  //
                   0, 3, 1, 0.6f,  0.55f, 0.95f, 0.9f,  1,  //
                   1, 2, 0, 0.3f,  0.1f,  0.45f, 0.3f,  0,  //
                   1, 2, 1, 0.05f, 0.5f,  0.9f,  0.95f, 0});
  const float anchors[3][2] = {{8, 10}, {20, 16}, {40, 36}};
  // The loss jumps where a prediction's best overlap crosses ignore_thresh:
  // the threshold goes in the middle of the widest gap between the
  // predictions' best overlaps, so no finite-difference step crosses it,
  // with predictions on both sides.
  std::vector<float> overlaps;
  for (int item = 0; item < 2; ++item) {
    for (int a = 0; a < 2; ++a) {
      for (int j = 0; j < 3; ++j) {
        for (int i = 0; i < 4; ++i) {
          const ops::YoloBox box =
              ops::decode_yolo_box(predictions.cpu_data() + layout.index(item, a, 0, j, i), 12, i,
                                   j, layout, anchors[a + 1][0] / 64, anchors[a + 1][1] / 48);
          float best = 0;
          for (int row = 0; row < 4; ++row) {
            const float* r = truth.cpu_data() + 8 * row;
            if (static_cast<int>(r[0]) != item) continue;
            const ops::YoloBox t{(r[3] + r[5]) / 2, (r[4] + r[6]) / 2, r[5] - r[3], r[6] - r[4]};
            best = std::max(best, ops::yolo_box_overlap(box, t));
          }
          overlaps.push_back(best);
        }
      }
    }
  }
  std::sort(overlaps.begin(), overlaps.end());
  float gap = 0;
  float ignore_thresh = 0;
  for (std::size_t k = 1; k < overlaps.size(); ++k) {
    if (overlaps[k - 1] > 0 && overlaps[k] - overlaps[k - 1] > gap) {
      gap = overlaps[k] - overlaps[k - 1];
      ignore_thresh = (overlaps[k] + overlaps[k - 1]) / 2;
    }
  }
  ASSERT_GT(gap, 0.02f);
  auto layer = make_layer(
      "name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 3 anchors: [8, 10, 20, 16, 40, "
      "36] mask: [1, 2] img_h: 48 img_w: 64 ignore_thresh: " +
      std::to_string(ignore_thresh) + " }");
  layer->setup({&predictions, &truth}, {&top});
  GradientCheckOptions options;
  options.bottoms_to_check = {0};
  options.step = 1e-3f;
  GradientChecker(options).check(*layer, {&predictions, &truth}, {&top});
}

XTRAIN_DEVICE_TEST_F(YoloLossHandExample, BadSettingsAndInputsAreErrors) {
  const auto setup_fails = [&](const std::string& prototxt, std::vector<std::string> parts) {
    layer = make_layer(prototxt);
    expect_setup_error(*layer, {&predictions, &truth}, {&top}, parts);
  };
  setup_fails("name: 'yolo' type: 'YoloLoss'", {"'yolo'", "yolo_param"});
  setup_fails("name: 'yolo' type: 'YoloLoss' yolo_param { anchors: [2, 2] img_h: 8 img_w: 8 }",
              {"'yolo'", "num_classes"});
  setup_fails(yolo_layer("", "anchors: [2, 2, 6]"), {"'yolo'", "3 values in anchors", "pairs"});
  setup_fails(yolo_layer("", "anchors: [2, 2, 6, -4]"), {"'yolo'", "positive"});
  setup_fails(yolo_layer("mask: 2"), {"'yolo'", "mask 2", "2 anchors"});
  setup_fails(yolo_layer("mask: 1"), {"'yolo'", "anchor 1 twice"});
  setup_fails(
      "name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 3 anchors: [2, 2, 6, 4] img_h: "
      "8 img_w: 8 }",
      {"'yolo'", "14 channels", "2 x (5 + 3) = 16"});
  setup_fails(
      "name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 2 anchors: [2, 2, 6, 4] img_h: "
      "8 }",
      {"'yolo'", "img_h and img_w"});
  setup_fails("name: 'yolo' type: 'YoloLoss' yolo_param { num_classes: 2 anchors: [2, 2, 6, 4] }",
              {"'yolo'", "third bottom"});
  setup_fails(yolo_layer() + " loss_param { normalization: VALID }",
              {"'yolo'", "batch size", "normalization"});

  // Labels: 0 is below first_class_label 1, 3 beyond the two classes.
  for (const float label : {0.0f, 3.0f}) {
    set_data(truth, {0, label, 0, 0.5f, 0.125f, 1, 0.625f, 0});
    layer = make_layer(yolo_layer());
    layer->setup({&predictions, &truth}, {&top});
    expect_error(
        [&] {
          layer->forward({&predictions, &truth}, {&top});
        },
        {"'yolo'", "label " + std::to_string(static_cast<int>(label)), "[1, 2]"});
  }
  set_data(truth, {1, 2, 0, 0.5f, 0.125f, 1, 0.625f, 0});
  expect_error(
      [&] {
        layer->forward({&predictions, &truth}, {&top});
      },
      {"'yolo'", "image 1", "1 images"});
  set_data(truth, {0, 2, 0, 0.5f, 0.125f, 1, 0.625f, 0});
  layer->forward({&predictions, &truth}, {&top});
  expect_error(
      [&] {
        layer->backward({&top}, {true, true}, {&predictions, &truth});
      },
      {"'yolo'", "ground truth", "propagate_down"});
}

}  // namespace
}  // namespace xtrain

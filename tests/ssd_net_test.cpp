// A single-shot detector of our own, in Caffe's prototxt as SSD writes it: a
// tiny VGG-like base, two source layers (the first through Normalize), each
// with PriorBox and loc/conf heads through Permute and Flatten, Concat,
// MultiBoxLoss in TRAIN and Softmax + DetectionOutput + DetectionEvaluate in
// TEST. The solver trains it on hand-made boxes and reports eval_type
// "detection" as SSD's mean average precision; the TEST net's outputs have
// SSD's layouts.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "box_images.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "layers/average_precision.hpp"
#include "solver_test_net.hpp"
#include "xtrain/net.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

std::string conv(const std::string& name, const std::string& bottom, int outputs) {
  return "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom + "' top: '" + name +
         "' convolution_param { num_output: " + std::to_string(outputs) +
         " kernel_size: 3 pad: 1 weight_filler { type: 'xavier' } bias_filler { type: "
         "'constant' } } }\n";
}

std::string relu(const std::string& blob) {
  return "layer { name: '" + blob + "_relu' type: 'ReLU' bottom: '" + blob + "' top: '" + blob +
         "' }\n";
}

std::string pool(const std::string& name, const std::string& bottom) {
  return "layer { name: '" + name + "' type: 'Pooling' bottom: '" + bottom + "' top: '" + name +
         "' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }\n";
}

// One prediction head as SSD's CreateMultiBoxHead writes it.
std::string head(const std::string& source, int priors, const std::string& prior_box) {
  std::string text;
  for (const auto& [kind, outputs] :
       std::vector<std::pair<std::string, int>>{{"loc", priors * 4}, {"conf", priors * 3}}) {
    const std::string name = source + "_mbox_" + kind;
    text += conv(name, source, outputs);
    text += "layer { name: '" + name + "_perm' type: 'Permute' bottom: '" + name + "' top: '" +
            name + "_perm' permute_param { order: 0 order: 2 order: 3 order: 1 } }\n";
    text += "layer { name: '" + name + "_flat' type: 'Flatten' bottom: '" + name + "_perm' top: '" +
            name + "_flat' flatten_param { axis: 1 } }\n";
  }
  text += "layer { name: '" + source + "_mbox_priorbox' type: 'PriorBox' bottom: '" + source +
          "' bottom: 'data' top: '" + source + "_mbox_priorbox' prior_box_param { " + prior_box +
          " clip: false variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 offset: 0.5 } "
          "}\n";
  return text;
}

// The two sources' blobs named `suffix`, joined.
std::string concat(const std::string& name, const std::string& suffix, int axis) {
  return "layer { name: '" + name + "' type: 'Concat' bottom: 'conv2_norm" + suffix +
         "' bottom: 'conv3" + suffix + "' top: '" + name +
         "' concat_param { axis: " + std::to_string(axis) + " } }\n";
}

// data: 2 x 3 x 16 x 16 images; label: SSD's ground-truth rows.
std::string ssd_net() {
  std::string text =
      "name: 'tiny_ssd'\n"
      "layer { name: 'data' type: 'Input' top: 'data' top: 'label' input_param { shape { dim: "
      "2 dim: 3 dim: 16 dim: 16 } shape { dim: 1 dim: 1 dim: 3 dim: 8 } } }\n";
  text += conv("conv1", "data", 8) + relu("conv1") + pool("pool1", "conv1");
  text += conv("conv2", "pool1", 8) + relu("conv2");  // 8 x 8
  text +=
      "layer { name: 'conv2_norm' type: 'Normalize' bottom: 'conv2' top: 'conv2_norm' "
      "norm_param { across_spatial: false channel_shared: false scale_filler { type: "
      "'constant' value: 2 } } }\n";
  text += pool("pool2", "conv2") + conv("conv3", "pool2", 8) + relu("conv3");  // 4 x 4
  // Priors per cell: 3 ratios + 1 (8 x 8 cells), 5 ratios + 1 (4 x 4 cells).
  text += head("conv2_norm", 4, "min_size: 4 max_size: 8 aspect_ratio: 2 step: 2");
  text += head("conv3", 6, "min_size: 8 max_size: 14 aspect_ratio: 2 aspect_ratio: 3 step: 4");
  text += concat("mbox_loc", "_mbox_loc_flat", 1) + concat("mbox_conf", "_mbox_conf_flat", 1) +
          concat("mbox_priorbox", "_mbox_priorbox", 2);
  text +=
      "layer { name: 'mbox_loss' type: 'MultiBoxLoss' bottom: 'mbox_loc' bottom: 'mbox_conf' "
      "bottom: 'mbox_priorbox' bottom: 'label' top: 'mbox_loss' include { phase: TRAIN } "
      "propagate_down: true propagate_down: true propagate_down: false propagate_down: false "
      "loss_param { normalization: VALID } multibox_loss_param { loc_loss_type: SMOOTH_L1 "
      "conf_loss_type: SOFTMAX loc_weight: 1 num_classes: 3 share_location: true match_type: "
      "PER_PREDICTION overlap_threshold: 0.5 use_prior_for_matching: true background_label_id: "
      "0 use_difficult_gt: true neg_pos_ratio: 3 neg_overlap: 0.5 code_type: CENTER_SIZE "
      "ignore_cross_boundary_bbox: false mining_type: MAX_NEGATIVE } }\n"
      "layer { name: 'mbox_conf_reshape' type: 'Reshape' bottom: 'mbox_conf' top: "
      "'mbox_conf_reshape' include { phase: TEST } reshape_param { shape { dim: 0 dim: -1 dim: 3 "
      "} } }\n"
      "layer { name: 'mbox_conf_softmax' type: 'Softmax' bottom: 'mbox_conf_reshape' top: "
      "'mbox_conf_softmax' include { phase: TEST } softmax_param { axis: 2 } }\n"
      "layer { name: 'mbox_conf_flatten' type: 'Flatten' bottom: 'mbox_conf_softmax' top: "
      "'mbox_conf_flatten' include { phase: TEST } flatten_param { axis: 1 } }\n"
      "layer { name: 'detection_out' type: 'DetectionOutput' bottom: 'mbox_loc' bottom: "
      "'mbox_conf_flatten' bottom: 'mbox_priorbox' top: 'detection_out' include { phase: TEST } "
      "detection_output_param { num_classes: 3 share_location: true background_label_id: 0 "
      "nms_param { nms_threshold: 0.45 top_k: 40 } code_type: CENTER_SIZE keep_top_k: 20 "
      "confidence_threshold: 0.01 } }\n"
      "layer { name: 'detection_eval' type: 'DetectionEvaluate' bottom: 'detection_out' bottom: "
      "'label' top: 'detection_eval' include { phase: TEST } detection_evaluate_param { "
      "num_classes: 3 background_label_id: 0 overlap_threshold: 0.5 evaluate_difficult_gt: "
      "false } }\n";
  return text;
}

NetParameter ssd_net_param(Phase phase) {
  NetParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(ssd_net(), &param));
  param.mutable_state()->set_phase(phase);
  return param;
}

// Two images with a bright square each where the boxes are; labels 1 and 2.
void feed(Net& net) {
  testing::feed_boxes_as_squares(net, {0, 1, 0, 0.25f, 0.25f, 0.75f, 0.75f, 0,  //
                                       1, 2, 0, 0.0f,  0.5f,  0.5f,  1.0f,  0,  //
                                       1, 1, 0, 0.5f,  0.0f,  1.0f,  0.5f,  0});
}

NetOptions quiet_options() {
  NetOptions options;
  options.verbose = false;
  options.device = testing::current_device();
  return options;
}

XTRAIN_DEVICE_TEST(SsdNetTest, TestNetOutputsDetectionsAndTheirEvaluation) {
  Net net(ssd_net_param(TEST), quiet_options());
  feed(net);
  net.forward();
  const Blob& detections = *net.blob_by_name("detection_out");
  ASSERT_EQ(detections.num_axes(), 4);
  EXPECT_EQ(detections.shape(3), 7);
  EXPECT_LE(detections.shape(2), 2 * 20);  // keep_top_k per image
  const Blob& evaluation = *net.blob_by_name("detection_eval");
  // Two class rows (classes 1 and 2) and one per detection.
  EXPECT_EQ(evaluation.shape(), (std::vector<int>{1, 1, 2 + detections.shape(2), 5}));
  EXPECT_EQ(testing::data_of(evaluation)[2], 2);  // two boxes of class 1
}

SolverParameter ssd_solver(const std::string& eval_type) {
  SolverParameter param;
  *param.mutable_net_param() = ssd_net_param(TRAIN);
  param.mutable_net_param()->clear_state();
  param.set_base_lr(0.02f);
  param.set_lr_policy("fixed");
  param.add_test_iter(1);
  param.set_test_interval(1000);
  param.set_test_initialization(false);
  param.set_eval_type(eval_type);
  param.set_ap_version("11point");
  param.set_random_seed(3);
  return param;
}

XTRAIN_DEVICE_TEST(SsdNetTest, TrainsOnHandMadeBoxesAndReportsTheMeanAveragePrecision) {
  auto solver = create_solver(ssd_solver("detection"), testing::quiet_solver_options());
  Net& net = solver->net();
  feed(net);
  // 64 cells x 4 priors + 16 cells x 6 priors.
  EXPECT_EQ(net.blob_by_name("mbox_priorbox")->shape(), (std::vector<int>{1, 2, (256 + 96) * 4}));
  EXPECT_EQ(net.blob_by_name("mbox_loc")->shape(), (std::vector<int>{2, (256 + 96) * 4}));
  const float first = net.forward();
  solver->step(20);
  const float last = net.forward();
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.5f * first) << "the loss went from " << first << " to " << last;

  Net& test_net = *solver->test_nets()[0];
  feed(test_net);
  solver->test(0);
  ASSERT_EQ(solver->last_test_results()[0].size(), 1u);
  const auto& [name, reported] = solver->last_test_results()[0][0];
  EXPECT_EQ(name, "detection_eval");
  EXPECT_GT(reported, 0.0f);
  // What the evaluation's rows give: the test net still holds them.
  const Blob& rows = *test_net.blob_by_name("detection_eval");
  detection::DetectionEvaluation evaluation;
  evaluation.add_rows(rows.cpu_data(), static_cast<int>(rows.count() / 5));
  EXPECT_FLOAT_EQ(reported, evaluation.mean_average_precision(detection::ApVersion::k11Point));
}

XTRAIN_DEVICE_TEST(SsdNetTest, UnknownEvalTypeIsAnError) {
  auto solver = create_solver(ssd_solver("segmentation"), testing::quiet_solver_options());
  testing::expect_error([&] { solver->test(0); }, {"eval_type", "\"segmentation\"", "detection"});
}

}  // namespace
}  // namespace xtrain

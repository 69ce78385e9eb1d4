// A YOLOv3-tiny-like net of our own in Caffe's prototxt: two prediction
// heads, the coarse one on a 4 x 4 map, the fine one on an 8 x 8 map made by
// Upsample and Concat, each with its YoloLoss (mask of the big, resp. small
// anchors; the net input's size from the data bottom). The solver trains it
// on hand-made boxes of both sizes.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "box_images.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "solver_test_net.hpp"
#include "xtrain/net.hpp"
#include "xtrain/solver.hpp"

namespace xtrain {
namespace {

std::string conv(const std::string& name, const std::string& bottom, int outputs, int kernel) {
  return "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom + "' top: '" + name +
         "' convolution_param { num_output: " + std::to_string(outputs) +
         " kernel_size: " + std::to_string(kernel) + " pad: " + std::to_string(kernel / 2) +
         " weight_filler { type: 'xavier' } bias_filler { type: 'constant' } } }\n";
}

std::string leaky(const std::string& blob) {
  return "layer { name: '" + blob + "_relu' type: 'ReLU' bottom: '" + blob + "' top: '" + blob +
         "' relu_param { negative_slope: 0.1 } }\n";
}

std::string pool(const std::string& name, const std::string& bottom) {
  return "layer { name: '" + name + "' type: 'Pooling' bottom: '" + bottom + "' top: '" + name +
         "' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }\n";
}

std::string yolo_loss(const std::string& name, const std::string& bottom, const std::string& mask) {
  return "layer { name: '" + name + "' type: 'YoloLoss' bottom: '" + bottom +
         "' bottom: 'label' bottom: 'data' top: '" + name +
         "' yolo_param { num_classes: 2 anchors: [2, 3, 4, 4, 8, 7] " + mask +
         " ignore_thresh: 0.7 } }\n";
}

// data: 2 x 3 x 16 x 16; two classes (labels 1, 2), three anchors.
NetParameter tiny_yolo_net() {
  std::string text =
      "name: 'tiny_yolo'\n"
      "layer { name: 'data' type: 'Input' top: 'data' top: 'label' input_param { shape { dim: "
      "2 dim: 3 dim: 16 dim: 16 } shape { dim: 1 dim: 1 dim: 3 dim: 8 } } }\n";
  text += conv("conv1", "data", 8, 3) + leaky("conv1") + pool("pool1", "conv1");    // 8 x 8
  text += conv("conv2", "pool1", 16, 3) + leaky("conv2") + pool("pool2", "conv2");  // 4 x 4
  // Coarse head: anchors 1 and 2, 2 x (5 + 2) channels.
  text += conv("head1", "pool2", 14, 1) + yolo_loss("yolo1", "head1", "mask: [1, 2]");
  // Fine head: upsampled coarse features beside conv1's, anchor 0.
  text += conv("reduce", "pool2", 8, 1) + leaky("reduce");
  text +=
      "layer { name: 'up' type: 'Upsample' bottom: 'reduce' top: 'up' upsample_param { scale: 2 "
      "} }\n"
      "layer { name: 'route' type: 'Concat' bottom: 'up' bottom: 'pool1' top: 'route' }\n";
  text += conv("head2", "route", 7, 1) + yolo_loss("yolo2", "head2", "mask: 0");
  NetParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &param));
  return param;
}

// Two 8 x 8 pixel boxes (anchor 2's shape: the coarse head) and one of
// 2.4 x 2.4 pixels (anchor 0: the fine head), each a bright square.
void feed(Net& net) {
  testing::feed_boxes_as_squares(net, {0, 1, 0, 0.25f, 0.25f, 0.75f, 0.75f, 0,  //
                                       0, 2, 1, 0.05f, 0.05f, 0.2f,  0.2f,  0,  //
                                       1, 2, 0, 0.0f,  0.5f,  0.5f,  1.0f,  0});
}

XTRAIN_DEVICE_TEST(YoloNetTest, TrainsBothHeadsOnHandMadeBoxes) {
  SolverParameter param;
  *param.mutable_net_param() = tiny_yolo_net();
  // The loss sums over every cell, as Darknet's: its learning rates fit
  // (0.01 with momentum 0.9 diverges here).
  param.set_base_lr(0.002f);
  param.set_momentum(0.9f);
  param.set_lr_policy("fixed");
  param.set_random_seed(3);
  auto solver = create_solver(param, testing::quiet_solver_options());
  Net& net = solver->net();
  feed(net);
  EXPECT_EQ(net.blob_by_name("up")->shape(), (std::vector<int>{2, 8, 8, 8}));
  EXPECT_EQ(net.blob_by_name("head2")->shape(), (std::vector<int>{2, 7, 8, 8}));
  const float first = net.forward();
  solver->step(40);
  const float last = net.forward();
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.5f * first) << "the loss went from " << first << " to " << last;
}

}  // namespace
}  // namespace xtrain

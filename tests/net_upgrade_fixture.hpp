// The upgrade tests' LeNet in Caffe's V1 and V2 prototxt and their helpers,
// shared by net_upgrade_test.cpp and solver_and_weights_upgrade_test.cpp.
#pragma once

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/net_upgrade.hpp"
#include "lmdb_fixture.hpp"
#include "proto_text.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/logging.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace net_upgrade_fixture {

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// LeNet as Caffe's examples wrote it in 2014: V1 layers, the input scaling in
// data_param, lr/decay multipliers per blob, a shared-parameter name.
inline const char* kV1LeNet = R"(
name: "LeNet"
layers {
  name: "mnist"
  type: DATA
  top: "data"
  top: "label"
  data_param { source: "TRAIN_DB" backend: LMDB batch_size: 4 scale: 0.00390625 }
  include: { phase: TRAIN }
}
layers {
  name: "mnist"
  type: DATA
  top: "data"
  top: "label"
  data_param { source: "TEST_DB" backend: LMDB batch_size: 2 scale: 0.00390625 }
  include: { phase: TEST }
}
layers {
  name: "conv1"
  type: CONVOLUTION
  bottom: "data"
  top: "conv1"
  blobs_lr: 1
  blobs_lr: 2
  convolution_param {
    num_output: 20 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layers {
  name: "pool1"
  type: POOLING
  bottom: "conv1"
  top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "conv2"
  type: CONVOLUTION
  bottom: "pool1"
  top: "conv2"
  blobs_lr: 1
  blobs_lr: 2
  weight_decay: 1
  weight_decay: 0
  convolution_param {
    num_output: 50 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layers {
  name: "pool2"
  type: POOLING
  bottom: "conv2"
  top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layers {
  name: "ip1"
  type: INNER_PRODUCT
  bottom: "pool2"
  top: "ip1"
  blobs_lr: 1
  blobs_lr: 2
  weight_decay: 1
  weight_decay: 0
  inner_product_param {
    num_output: 500 weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layers { name: "relu1" type: RELU bottom: "ip1" top: "ip1" }
layers {
  name: "ip2"
  type: INNER_PRODUCT
  bottom: "ip1"
  top: "ip2"
  param: "ip2_w"
  param: "ip2_b"
  blob_share_mode: STRICT
  blobs_lr: 1
  blobs_lr: 2
  inner_product_param {
    num_output: 10 weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layers {
  name: "accuracy"
  type: ACCURACY
  bottom: "ip2"
  bottom: "label"
  top: "accuracy"
  include: { phase: TEST }
}
layers {
  name: "loss"
  type: SOFTMAX_LOSS
  bottom: "ip2"
  bottom: "label"
  top: "loss"
  loss_weight: 1
}
)";

// The same net written by hand in today's format.
inline const char* kV2LeNet = R"(
name: "LeNet"
layer {
  name: "mnist"
  type: "Data"
  top: "data"
  top: "label"
  include { phase: TRAIN }
  transform_param { scale: 0.00390625 }
  data_param { source: "TRAIN_DB" backend: LMDB batch_size: 4 }
}
layer {
  name: "mnist"
  type: "Data"
  top: "data"
  top: "label"
  include { phase: TEST }
  transform_param { scale: 0.00390625 }
  data_param { source: "TEST_DB" backend: LMDB batch_size: 2 }
}
layer {
  name: "conv1"
  type: "Convolution"
  bottom: "data"
  top: "conv1"
  param { lr_mult: 1 }
  param { lr_mult: 2 }
  convolution_param {
    num_output: 20 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layer {
  name: "pool1"
  type: "Pooling"
  bottom: "conv1"
  top: "pool1"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "conv2"
  type: "Convolution"
  bottom: "pool1"
  top: "conv2"
  param { lr_mult: 1 decay_mult: 1 }
  param { lr_mult: 2 decay_mult: 0 }
  convolution_param {
    num_output: 50 kernel_size: 5 stride: 1
    weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layer {
  name: "pool2"
  type: "Pooling"
  bottom: "conv2"
  top: "pool2"
  pooling_param { pool: MAX kernel_size: 2 stride: 2 }
}
layer {
  name: "ip1"
  type: "InnerProduct"
  bottom: "pool2"
  top: "ip1"
  param { lr_mult: 1 decay_mult: 1 }
  param { lr_mult: 2 decay_mult: 0 }
  inner_product_param {
    num_output: 500 weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layer { name: "relu1" type: "ReLU" bottom: "ip1" top: "ip1" }
layer {
  name: "ip2"
  type: "InnerProduct"
  bottom: "ip1"
  top: "ip2"
  param { name: "ip2_w" share_mode: STRICT lr_mult: 1 }
  param { name: "ip2_b" lr_mult: 2 }
  inner_product_param {
    num_output: 10 weight_filler { type: "xavier" } bias_filler { type: "constant" }
  }
}
layer {
  name: "accuracy"
  type: "Accuracy"
  bottom: "ip2"
  bottom: "label"
  top: "accuracy"
  include { phase: TEST }
}
layer {
  name: "loss"
  type: "SoftmaxWithLoss"
  bottom: "ip2"
  bottom: "label"
  top: "loss"
  loss_weight: 1
}
)";

// Equal protos, or a failure showing both.
inline ::testing::AssertionResult same_proto(const google::protobuf::Message& actual,
                                             const google::protobuf::Message& expected) {
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  if (differencer.Compare(actual, expected)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << differences << "\nactual:\n" << actual.DebugString();
}

inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
    text.replace(at, from.size(), to);
    at += to.size();
  }
  return text;
}

inline NetOptions quiet_net() {
  NetOptions options;
  options.verbose = false;
  options.random_seed = 11;
  return options;
}

// Silences the upgrade warnings of a test, restoring the threshold after.
class QuietLog {
 public:
  QuietLog() : saved_(min_log_severity()) { set_min_log_severity(LogSeverity::kError); }
  ~QuietLog() { set_min_log_severity(saved_); }

 private:
  LogSeverity saved_;
};

inline void expect_same_net(const Net& a, const Net& b) {
  ASSERT_EQ(a.layer_names(), b.layer_names());
  for (std::size_t i = 0; i < a.layers().size(); ++i) {
    EXPECT_STREQ(a.layers()[i]->type(), b.layers()[i]->type()) << a.layer_names()[i];
  }
  ASSERT_EQ(a.blob_names(), b.blob_names());
  for (std::size_t i = 0; i < a.blobs().size(); ++i) {
    EXPECT_EQ(a.blobs()[i]->shape(), b.blobs()[i]->shape()) << a.blob_names()[i];
  }
  ASSERT_EQ(a.learnable_params().size(), b.learnable_params().size());
  EXPECT_EQ(a.params_lr(), b.params_lr());
  EXPECT_EQ(a.params_weight_decay(), b.params_weight_decay());
  EXPECT_EQ(a.param_owners(), b.param_owners());
  EXPECT_EQ(a.blob_loss_weights(), b.blob_loss_weights());
  for (std::size_t i = 0; i < a.learnable_params().size(); ++i) {
    const Blob& pa = *a.learnable_params()[i];
    const Blob& pb = *b.learnable_params()[i];
    ASSERT_EQ(pa.shape(), pb.shape());
    for (std::size_t j = 0; j < pa.count(); ++j) {
      ASSERT_EQ(pa.cpu_data()[j], pb.cpu_data()[j]) << "param " << i << " value " << j;
    }
  }
}

// A deploy-style V1 net declaring its input with input/input_dim.
inline const char* kV1WithInputs = R"(
name: "tiny"
input: "data"
input_dim: 2 input_dim: 3 input_dim: 6 input_dim: 6
input: "label"
input_dim: 2 input_dim: 1 input_dim: 1 input_dim: 1
layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv"
         convolution_param { num_output: 4 kernel_size: 3 pad: 1
                             weight_filler { type: "gaussian" std: 0.1 } } }
layers { name: "tanh" type: TANH bottom: "conv" top: "conv" }
layers { name: "ip" type: INNER_PRODUCT bottom: "conv" top: "ip"
         inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "ip" bottom: "label" top: "loss" }
)";

inline const char* kV2WithInputLayer = R"(
name: "tiny"
layer { name: "input" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 2 dim: 3 dim: 6 dim: 6 }
                      shape { dim: 2 dim: 1 dim: 1 dim: 1 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1
                            weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "tanh" type: "TanH" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";

inline void fill_tiny_inputs(Net& net) {
  Blob& data = *net.blob_by_name("data");
  for (std::size_t i = 0; i < data.count(); ++i) data.mutable_cpu_data()[i] = std::sin(0.3f * i);
  net.blob_by_name("label")->mutable_cpu_data()[0] = 2;
  net.blob_by_name("label")->mutable_cpu_data()[1] = 0;
}

}  // namespace net_upgrade_fixture
}  // namespace xtrain::testing

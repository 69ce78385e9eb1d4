// Empty batches (N = 0), as a Filter that selects nothing gives them (Caffe
// lets them through). What an empty batch means, for every layer and both
// devices (docs/layers.md, "Empty batches"):
//   - the tops that follow the batch are empty (N = 0 on the batch axis);
//     tops that do not (PriorBox's priors, a loss, Accuracy) keep their shape;
//   - a loss of no items is 0 and an accuracy of no items is 0: nothing is
//     divided by a count of 0, so no NaN reaches the solver's smoothed loss;
//   - nothing learnable changes: every parameter gradient gets nothing added
//     (as a sum over no items), and no stored statistic moves (BatchNorm's
//     running averages, its bias-correction factor);
//   - no cuDNN descriptor is set (cuDNN rejects N = 0) and no kernel runs.
// Every case of the cross-device harness is run with its batch emptied: on
// the CPU (these rules checked directly), and on the GPU against the CPU.
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cross_device_harness.hpp"
#include "device_test_support.hpp"
#include "layer_test_support.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

using namespace testing;

// Cases whose bottoms have no batch axis to empty: their results do not
// depend on a batch (DummyData and Parameter have no bottoms; DetectionEvaluate
// reads detection rows, not items).
bool has_no_batch(const CrossDeviceCase& c) {
  return c.bottoms.empty() || c.name == "DetectionEvaluate";
}

// The axis of the items: 0, except for the recurrent layers, whose inputs are
// (T, N, ...) (LSTMUnit's are (1, N, ...)).
int batch_axis(const CrossDeviceCase& c) {
  const std::string& n = c.name;
  return n == "LSTMUnit" || n.rfind("RNN", 0) == 0 || n.rfind("LSTM", 0) == 0 ? 1 : 0;
}

// The case with its batch emptied: every bottom that has the first bottom's
// number of items along the batch axis gets 0 there. Given values (prior
// boxes, ground-truth rows) keep theirs, except that ground truth of images
// no longer in the batch is dropped (SSD's "no boxes": no rows).
CrossDeviceCase emptied(CrossDeviceCase c) {
  const int axis = batch_axis(c);
  const int items = c.bottoms[0].shape[static_cast<std::size_t>(axis)];
  for (std::size_t b = 0; b < c.bottoms.size(); ++b) {
    BottomSpec& spec = c.bottoms[b];
    const bool ground_truth = spec.shape.size() == 4 && spec.shape[3] == 8 && !spec.values.empty();
    if (ground_truth) {
      spec.shape[2] = 0;
      spec.values.clear();
      continue;
    }
    if (!spec.values.empty()) continue;
    // RNN's static input is (N, ...) beside the (T, N, ...) sequence.
    const bool static_input = c.name.rfind("RNN", 0) == 0 && b == 2;
    const int own_axis = static_input ? 0 : axis;
    if (static_cast<int>(spec.shape.size()) > own_axis &&
        spec.shape[static_cast<std::size_t>(own_axis)] == items) {
      spec.shape[static_cast<std::size_t>(own_axis)] = 0;
    }
  }
  // BatchReindex: no items and no picks.
  if (c.name == "BatchReindex") c.bottoms[1].shape = {0};
  c.name += "Empty";
  return c;
}

std::vector<CrossDeviceCase> empty_batch_cases() {
  std::vector<CrossDeviceCase> cases;
  for (const CrossDeviceCase& c : every_cross_device_case()) {
    if (!has_no_batch(c)) cases.push_back(emptied(c));
  }
  return cases;
}

bool all_finite(const float* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

constexpr float kPlantedGradient = 0.25f;

class EmptyBatchTest : public DeviceTestWithParam<CrossDeviceCase> {};

// The rules above on the test's device, then (on a GPU) the same results as
// the CPU's.
TEST_P(EmptyBatchTest, RunsAndChangesNothingLearnable) {
  const CrossDeviceCase& c = GetParam();
  testing::detail::LayerRun run = testing::detail::set_up_on(c, current_device());
  if (c.prepare) c.prepare(*run.layer);
  std::vector<std::vector<float>> values_before;
  for (auto& blob : run.layer->blobs()) {
    values_before.push_back(data_of(*blob));
    std::fill_n(blob->mutable_cpu_diff(), blob->count(), kPlantedGradient);
  }
  run.layer->forward(run.bottom_vec(), run.top_vec());
  const std::string type = run.layer->type();
  const bool loss_or_accuracy =
      type == "Accuracy" || (type.size() > 4 && type.compare(type.size() - 4, 4, "Loss") == 0);
  if (loss_or_accuracy) {
    ASSERT_EQ(run.tops[0]->count(), 1u) << type;
    EXPECT_EQ(run.tops[0]->cpu_data()[0], 0.0f) << type << " of no items";
  }
  for (std::size_t t = 0; t < run.tops.size(); ++t) {
    const Blob& top = *run.tops[t];
    EXPECT_TRUE(all_finite(top.cpu_data(), top.count()))
        << "top " << t << " " << top.shape_string() << " holds a NaN or an infinity";
  }
  if (c.backward) {
    for (auto& top : run.tops) {
      std::fill_n(top->mutable_cpu_diff(), top->count(), 1.0f);
    }
    std::vector<bool> propagate_down;
    for (const BottomSpec& spec : c.bottoms) propagate_down.push_back(spec.gradient);
    run.layer->backward(run.top_vec(), propagate_down, run.bottom_vec());
    for (std::size_t b = 0; b < run.bottoms.size(); ++b) {
      if (!propagate_down[b]) continue;
      EXPECT_TRUE(all_finite(run.bottoms[b]->cpu_diff(), run.bottoms[b]->count()))
          << "bottom diff " << b;
    }
  }
  for (std::size_t i = 0; i < run.layer->blobs().size(); ++i) {
    const Blob& blob = *run.layer->blobs()[i];
    EXPECT_EQ(data_of(blob), values_before[i]) << "learnable blob " << i << " changed";
    EXPECT_EQ(diff_of(blob), std::vector<float>(blob.count(), kPlantedGradient))
        << "learnable blob " << i << ": an empty batch added to its gradient";
  }
  if (current_device().is_gpu()) {
    const CrossDeviceDifference difference =
        compare_across_devices(c, Device::cpu(), current_device());
    EXPECT_EQ(difference.largest, 0.0) << "CPU vs GPU: " << difference.where;
  }
}

XTRAIN_INSTANTIATE_ON_DEVICES(EmptyBatchTest, ::testing::ValuesIn(empty_batch_cases()),
                              [](const ::testing::TestParamInfo<CrossDeviceCase>& param_info) {
                                return param_info.param.name;
                              });

// The emptying above reaches every case with a batch: a case it cannot empty
// would silently test a full batch.
TEST(EmptyBatchCases, EveryCaseWithABatchIsEmptied) {
  for (const CrossDeviceCase& c : empty_batch_cases()) {
    const int axis = batch_axis(c);
    EXPECT_EQ(c.bottoms[0].shape[static_cast<std::size_t>(axis)], 0) << c.name;
  }
  EXPECT_GE(empty_batch_cases().size(), every_cross_device_case().size() - 3);
}

// A net whose Filter selects nothing: every layer after it sees N = 0, in
// forward and in backward, on the test's device. Selecting every item
// instead gives a loss and gradients (the test can tell the two apart).
std::string filtered_net(float keep) {
  return R"(
name: 'filter_nothing'
layer { name: 'data' type: 'DummyData' top: 'data' top: 'label' top: 'keep'
  dummy_data_param { shape { dim: 4 dim: 3 dim: 8 dim: 8 } shape { dim: 4 } shape { dim: 4 }
    data_filler { type: 'gaussian' std: 1 } data_filler { type: 'constant' value: 2 }
    data_filler { type: 'constant' value: )" +
         std::to_string(keep) + R"( } } }
layer { name: 'filter' type: 'Filter' bottom: 'data' bottom: 'label' bottom: 'keep'
  top: 'kept' top: 'kept_label' }
layer { name: 'conv' type: 'Convolution' bottom: 'kept' top: 'conv'
  convolution_param { num_output: 4 kernel_size: 3 pad: 1 weight_filler { type: 'xavier' } } }
layer { name: 'bn' type: 'BatchNorm' bottom: 'conv' top: 'conv' }
layer { name: 'relu' type: 'ReLU' bottom: 'conv' top: 'conv' }
layer { name: 'pool' type: 'Pooling' bottom: 'conv' top: 'pool'
  pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: 'lrn' type: 'LRN' bottom: 'pool' top: 'lrn' }
layer { name: 'deconv' type: 'Deconvolution' bottom: 'lrn' top: 'deconv'
  convolution_param { num_output: 2 kernel_size: 2 stride: 2 weight_filler { type: 'xavier' } } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'deconv' top: 'ip'
  inner_product_param { num_output: 5 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'kept_label' top: 'loss' }
layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip' bottom: 'kept_label' top: 'accuracy' }
)";
}

bool any_gradient(const Net& net) {
  for (const Blob* param : net.learnable_params()) {
    for (std::size_t i = 0; i < param->count(); ++i) {
      if (param->cpu_diff()[i] != 0) return true;
    }
  }
  return false;
}

XTRAIN_DEVICE_TEST(EmptyBatchNet, AFilterThatSelectsNothingTrainsNothing) {
  NetParameter param;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(filtered_net(0), &param));
  Net net(param, net_options());
  net.clear_param_diffs();
  const float loss = net.forward_backward();
  EXPECT_EQ(loss, 0.0f);
  EXPECT_EQ(net.blob_by_name("kept")->shape(), (std::vector<int>{0, 3, 8, 8}));
  EXPECT_EQ(net.blob_by_name("ip")->shape(), (std::vector<int>{0, 5}));
  EXPECT_EQ(net.blob_by_name("accuracy")->cpu_data()[0], 0.0f);
  EXPECT_FALSE(any_gradient(net));

  // The same net, its Filter keeping everything: a loss and gradients.
  NetParameter keeping;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(filtered_net(1), &keeping));
  Net full(keeping, net_options());
  full.clear_param_diffs();
  EXPECT_GT(full.forward_backward(), 0.0f);
  EXPECT_TRUE(any_gradient(full));
}

}  // namespace
}  // namespace xtrain

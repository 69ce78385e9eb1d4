// NVIDIA Caffe 0.17's cuDNN and multi-GPU tuning fields
// (NetParameter's default_conv_algos_override, reduce_buckets,
// default_cudnn_math_override, eltwise_mem_sharing; LayerParameter's
// cudnn_math_override) are read so that its nets load, and change nothing:
// a net that sets them trains bit for bit as the same net without them.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "blocked_layout_test_support.hpp"
#include "test_net_text.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

std::string tuning_net(bool with_fields) {
  const std::string net_fields = with_fields
                                     ? "default_conv_algos_override: '1,1,1' reduce_buckets: 2 "
                                       "default_cudnn_math_override: 0 eltwise_mem_sharing: false\n"
                                     : "";
  const std::string layer_field = with_fields ? " cudnn_math_override: 1" : "";
  return "name: 'tuning'\nforce_backward: true\n" + net_fields +
         testing::random_data_and_labels({2, 3, 6, 6}, "type: 'uniform' min: 0 max: 3.99") +
         "layer { name: 'conv' type: 'Convolution' bottom: 'data' top: 'conv'" + layer_field +
         "\n  convolution_param { num_output: 4 kernel_size: 3 pad: 1\n"
         "    weight_filler { type: 'gaussian' std: 0.3 } } }\n"
         "layer { name: 'bn' type: 'BatchNorm' bottom: 'conv' top: 'bn'\n"
         "  batch_norm_param { scale_bias: true } }\n"
         "layer { name: 'sum' type: 'Eltwise' bottom: 'bn' bottom: 'conv' top: 'sum'" +
         layer_field +
         " }\n"
         "layer { name: 'ip' type: 'InnerProduct' bottom: 'sum' top: 'ip'\n"
         "  inner_product_param { num_output: 4 weight_filler { type: 'xavier' } } }\n"
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip' bottom: 'label' top: 'loss' "
         "}\n";
}

TEST(NvidiaCaffeTuningFields, AreReadAndChangeNothing) {
  NetOptions options;
  options.random_seed = 3;
  std::unique_ptr<Net> plain = testing::make_quiet_net(tuning_net(false), TRAIN, options);
  std::unique_ptr<Net> tuned = testing::make_quiet_net(tuning_net(true), TRAIN, options);
  for (int iteration = 0; iteration < 2; ++iteration) {
    plain->clear_param_diffs();
    tuned->clear_param_diffs();
    EXPECT_EQ(plain->forward_backward(), tuned->forward_backward());
    testing::expect_nets_match(*plain, *tuned, true, "iteration " + std::to_string(iteration));
  }
}

}  // namespace
}  // namespace xtrain

// Every computing layer type, run on the CPU and on the test's device with
// the same parameters, inputs and top diffs: tops, bottom diffs and learnable
// blobs must agree within each case's relative tolerance
// (cross_device_harness.hpp). The GPU instances compare the CPU with GPU 0;
// the CPU instances compare the CPU with itself, which proves the harness
// runs every case (and must give no difference at all), and
// CrossDeviceHarness.* shows that it catches a planted difference.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cross_device_harness.hpp"
#include "device_test_support.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using namespace testing;

// Tolerances: element-wise layers compute the same formula on both devices
// (shared functors), so only libm vs CUDA intrinsics differ; layers that sum
// (GEMMs, cuDNN convolutions with Winograd/FFT algorithms, reductions) may
// add in another order.
constexpr float kElementwise = 1e-5f;
constexpr float kSums = 1e-4f;
constexpr float kConvolutions = 1e-3f;

const char* kWeights =
    "weight_filler { type: 'gaussian' std: 0.3 } bias_filler { type: 'uniform' min: -0.5 max: 0.5 "
    "}";

CrossDeviceCase make_case(std::string name, std::string prototxt, std::vector<BottomSpec> bottoms,
                          float tolerance = kElementwise) {
  CrossDeviceCase c;
  c.name = std::move(name);
  c.prototxt = std::move(prototxt);
  c.bottoms = std::move(bottoms);
  c.tolerance = tolerance;
  return c;
}

CrossDeviceCase with_tops(CrossDeviceCase c, int tops) {
  c.tops = tops;
  return c;
}

CrossDeviceCase forward_only(CrossDeviceCase c) {
  c.backward = false;
  return c;
}

CrossDeviceCase in_phase(CrossDeviceCase c, Phase phase) {
  c.phase = phase;
  return c;
}

std::string conv(const std::string& type, const std::string& settings) {
  return "name: 'c' type: '" + type + "' convolution_param { " + settings + " " + kWeights + " }";
}

std::string pool(const std::string& settings) {
  return "name: 'p' type: 'Pooling' pooling_param { " + settings + " }";
}

// BatchNorm's stored statistics: setup leaves them zero; give them values
// (mean sum, variance sum, scale factor) as a trained net would have.
void stored_statistics(Layer& layer) {
  testing::fill_uniform(*layer.blobs()[0], 5, -1.0f, 1.0f);
  testing::fill_uniform(*layer.blobs()[1], 6, 0.5f, 2.0f);
  layer.blobs()[2]->mutable_cpu_data()[0] = 1.5f;
}

CrossDeviceCase with_stored_statistics(CrossDeviceCase c) {
  c.prepare = stored_statistics;
  return c;
}

std::vector<CrossDeviceCase> convolution_cases() {
  const std::vector<int> odd = {2, 4, 7, 9};
  return {
      make_case("ConvolutionPad", conv("Convolution", "num_output: 5 kernel_size: 3 pad: 1"),
                {uniform(odd)}, kConvolutions),
      make_case("ConvolutionStrideOddSizes",
                conv("Convolution", "num_output: 3 kernel_size: 3 stride: 2"),
                {uniform({1, 3, 8, 11})}, kConvolutions),
      make_case("ConvolutionGroupsDilation",
                conv("Convolution", "num_output: 6 kernel_size: 3 group: 2 dilation: 2 pad: 2"),
                {uniform(odd)}, kConvolutions),
      make_case("ConvolutionOneByOneNoBias",
                conv("Convolution", "num_output: 3 kernel_size: 1 bias_term: false"),
                {uniform(odd)}, kConvolutions),
      make_case(
          "ConvolutionRectangular",
          conv("Convolution",
               "num_output: 4 kernel_h: 3 kernel_w: 2 pad_h: 1 pad_w: 0 stride_h: 1 stride_w: 2"),
          {uniform(odd)}, kConvolutions),
      with_tops(
          make_case("ConvolutionTwoBottoms", conv("Convolution", "num_output: 2 kernel_size: 3"),
                    {uniform(odd), uniform(odd)}, kConvolutions),
          2),
      make_case("DeconvolutionStridePad",
                conv("Deconvolution", "num_output: 3 kernel_size: 4 stride: 2 pad: 1"),
                {uniform({2, 4, 5, 6})}, kConvolutions),
      make_case("DeconvolutionGroups",
                conv("Deconvolution", "num_output: 4 kernel_size: 3 group: 2"),
                {uniform({1, 4, 5, 7})}, kConvolutions),
      // col2im adds in the same order on both devices.
      make_case("Im2colStridePad", conv("Im2col", "kernel_size: 3 stride: 2 pad: 1"),
                {uniform({2, 3, 7, 6})}),
      make_case("Im2colRectangularDilated",
                conv("Im2col", "kernel_h: 2 kernel_w: 3 dilation: 2 stride_h: 1 stride_w: 2"),
                {uniform({1, 2, 6, 9})}),
  };
}

std::vector<CrossDeviceCase> pooling_cases() {
  // 8 x 10 with kernel 3, stride 2: ceil mode adds an edge window that
  // hangs over the input; with pad 1 the windows cover the padding.
  const std::vector<int> edge = {2, 3, 8, 10};
  return {
      make_case("MaxPoolingCeilEdge", pool("pool: MAX kernel_size: 3 stride: 2"), {uniform(edge)}),
      make_case("MaxPoolingPad", pool("pool: MAX kernel_size: 3 stride: 2 pad: 1"),
                {uniform(edge)}),
      with_tops(make_case("MaxPoolingMaskTop", pool("pool: MAX kernel_size: 2 stride: 2"),
                          {uniform({2, 3, 7, 9})}),
                2),
      make_case("AveragePoolingCeilEdge", pool("pool: AVE kernel_size: 3 stride: 2"),
                {uniform(edge)}, kSums),
      make_case("AveragePoolingPad", pool("pool: AVE kernel_size: 3 stride: 2 pad: 1"),
                {uniform(edge)}, kSums),
      // round_mode FLOOR: cuDNN's own rounding for AVE, our kernels for MAX.
      make_case("MaxPoolingFloor",
                pool("pool: MAX kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR"),
                {uniform(edge)}),
      make_case("AveragePoolingFloor",
                pool("pool: AVE kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR"),
                {uniform(edge)}, kSums),
      make_case("AveragePoolingRectangular",
                pool("pool: AVE kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1"),
                {uniform({2, 2, 7, 5})}, kSums),
      make_case("GlobalMaxPooling", pool("pool: MAX global_pooling: true"),
                {uniform({2, 3, 5, 7})}),
      make_case("GlobalAveragePooling", pool("pool: AVE global_pooling: true"),
                {uniform({2, 3, 5, 7})}, kSums),
      make_case("SPPMax", "name: 's' type: 'SPP' spp_param { pyramid_height: 3 pool: MAX }",
                {uniform({2, 3, 9, 11})}),
      make_case("SPPAverage", "name: 's' type: 'SPP' spp_param { pyramid_height: 2 pool: AVE }",
                {uniform({2, 3, 9, 11})}, kSums),
  };
}

std::vector<CrossDeviceCase> normalization_cases() {
  const std::vector<int> image = {2, 7, 5, 6};
  return {
      make_case("LRNAcrossChannels",
                "name: 'n' type: 'LRN' lrn_param { local_size: 5 alpha: 0.5 beta: 0.75 k: 2 }",
                {uniform(image)}, kSums),
      make_case("LRNWithinChannel",
                "name: 'n' type: 'LRN' lrn_param { local_size: 3 alpha: 0.5 beta: 0.75 "
                "norm_region: WITHIN_CHANNEL }",
                {uniform(image)}, kSums),
      make_case("BatchNormBatchStatistics",
                "name: 'b' type: 'BatchNorm' batch_norm_param { moving_average_fraction: 0.9 }",
                {uniform({4, 3, 5, 6})}, kSums),
      make_case("BatchNormTwoAxes", "name: 'b' type: 'BatchNorm'", {uniform({8, 5})}, kSums),
      with_stored_statistics(
          make_case("BatchNormGlobalStatistics",
                    "name: 'b' type: 'BatchNorm' batch_norm_param { use_global_stats: true }",
                    {uniform({4, 3, 5, 6})}, kSums)),
      in_phase(with_stored_statistics(make_case("BatchNormTestPhase", "name: 'b' type: 'BatchNorm'",
                                                {uniform({2, 3, 4, 5})}, kSums)),
               TEST),
      make_case("BatchNormScaleBias",
                "name: 'b' type: 'BatchNorm' batch_norm_param { scale_bias: true "
                "scale_filler { type: 'uniform' min: 0.5 max: 2 } "
                "bias_filler { type: 'uniform' min: -1 max: 1 } }",
                {uniform({4, 3, 5, 6})}, kSums),
      with_stored_statistics(make_case(
          "BatchNormScaleBiasGlobalStatistics",
          "name: 'b' type: 'BatchNorm' batch_norm_param { use_global_stats: true scale_bias: true "
          "scale_filler { type: 'uniform' min: -2 max: 2 } "
          "bias_filler { type: 'uniform' min: -1 max: 1 } }",
          {uniform({4, 3, 5, 6})}, kSums)),
      make_case("MVNMeanOnly", "name: 'm' type: 'MVN' mvn_param { normalize_variance: false }",
                {uniform({2, 3, 4, 5})}, kSums),
      make_case("MVNPerChannel", "name: 'm' type: 'MVN'", {uniform({2, 3, 4, 5})}, kSums),
      make_case("MVNAcrossChannels", "name: 'm' type: 'MVN' mvn_param { across_channels: true }",
                {uniform({2, 3, 4, 5})}, kSums),
      make_case("SoftmaxChannels", "name: 's' type: 'Softmax'", {uniform({2, 5, 3, 4}, -4, 4)},
                kSums),
      make_case("SoftmaxAxisTwo", "name: 's' type: 'Softmax' softmax_param { axis: 2 }",
                {uniform({2, 3, 6, 4}, -4, 4)}, kSums),
  };
}

std::vector<CrossDeviceCase> neuron_cases() {
  const std::vector<int> shape = {2, 3, 4, 5};
  return {
      make_case("ReLU", "name: 'r' type: 'ReLU'", {uniform(shape)}),
      make_case("LeakyReLU", "name: 'r' type: 'ReLU' relu_param { negative_slope: 0.1 }",
                {uniform(shape)}),
      make_case("Clip", "name: 'c' type: 'Clip' clip_param { min: -0.5 max: 0.6 }",
                {uniform(shape)}),
      make_case("Swish", "name: 's' type: 'Swish' swish_param { beta: 1.5 }",
                {uniform(shape, -4, 4)}),
      make_case("GELU", "name: 'g' type: 'GELU'", {uniform(shape, -4, 4)}),
      make_case("Sigmoid", "name: 's' type: 'Sigmoid'", {uniform(shape, -5, 5)}),
      make_case("TanH", "name: 't' type: 'TanH'", {uniform(shape, -3, 3)}),
      make_case("AbsVal", "name: 'a' type: 'AbsVal'", {uniform(shape)}),
      make_case("PowerSquare",
                "name: 'p' type: 'Power' power_param { power: 2 scale: 0.5 shift: 1 }",
                {uniform(shape)}),
      make_case("PowerSquareRoot", "name: 'p' type: 'Power' power_param { power: 0.5 }",
                {uniform(shape, 0.5f, 2.0f)}),
      make_case("ExpNatural", "name: 'e' type: 'Exp'", {uniform(shape, -2, 2)}),
      make_case("ExpBaseTwoScaleShift",
                "name: 'e' type: 'Exp' exp_param { base: 2 scale: 0.5 shift: 0.1 }",
                {uniform(shape, -2, 2)}),
      make_case("Log", "name: 'l' type: 'Log' log_param { base: 10 scale: 2 shift: 0.5 }",
                {uniform(shape, 0.5f, 3.0f)}),
      make_case("BNLL", "name: 'b' type: 'BNLL'", {uniform(shape, -5, 5)}),
      forward_only(make_case("Threshold",
                             "name: 't' type: 'Threshold' threshold_param { threshold: 0.2 }",
                             {uniform(shape)})),
      make_case("ELU", "name: 'e' type: 'ELU' elu_param { alpha: 0.5 }", {uniform(shape, -2, 2)}),
      make_case(
          "PReLU",
          "name: 'p' type: 'PReLU' prelu_param { filler { type: 'uniform' min: 0 max: 0.5 } }",
          {uniform(shape)}, kSums),
      make_case("PReLUChannelShared",
                "name: 'p' type: 'PReLU' prelu_param { channel_shared: true }", {uniform(shape)},
                kSums),
      make_case("DropoutTrain", "name: 'd' type: 'Dropout' dropout_param { dropout_ratio: 0.3 }",
                {uniform(shape)}),
      in_phase(make_case("DropoutTest", "name: 'd' type: 'Dropout'", {uniform(shape)}), TEST),
  };
}

std::vector<CrossDeviceCase> combining_cases() {
  const std::vector<int> shape = {2, 3, 4, 5};
  return {
      make_case("EltwiseSumCoefficients",
                "name: 'e' type: 'Eltwise' eltwise_param { operation: SUM coeff: 1 coeff: -0.5 "
                "coeff: 2 }",
                {uniform(shape), uniform(shape), uniform(shape)}),
      make_case(
          "EltwiseProd", "name: 'e' type: 'Eltwise' eltwise_param { operation: PROD }",
          {uniform(shape, 0.5f, 2.0f), uniform(shape, -2.0f, -0.5f), uniform(shape, 0.5f, 2.0f)}),
      make_case(
          "EltwiseProdUnstableGradient",
          "name: 'e' type: 'Eltwise' eltwise_param { operation: PROD stable_prod_grad: false }",
          {uniform(shape, 0.5f, 2.0f), uniform(shape, 0.5f, 2.0f)}),
      make_case("EltwiseMax", "name: 'e' type: 'Eltwise' eltwise_param { operation: MAX }",
                {uniform(shape), uniform(shape), uniform(shape)}),
      make_case("ConcatChannels", "name: 'c' type: 'Concat'",
                {uniform(shape), uniform({2, 2, 4, 5})}),
      make_case("ConcatAxisZero", "name: 'c' type: 'Concat' concat_param { axis: 0 }",
                {uniform({2, 3, 4}), uniform({3, 3, 4})}),
      with_tops(make_case("SliceAtPoints",
                          "name: 's' type: 'Slice' slice_param { slice_point: 2 slice_point: 5 }",
                          {uniform({2, 7, 3, 4})}),
                3),
      with_tops(make_case("SliceAxisTwoEqually", "name: 's' type: 'Slice' slice_param { axis: 2 }",
                          {uniform({2, 3, 6, 4})}),
                2),
      with_tops(make_case("Split", "name: 's' type: 'Split'", {uniform(shape)}), 2),
      with_tops(
          make_case("Silence", "name: 's' type: 'Silence'", {uniform(shape), uniform({3, 2})}), 0),
      make_case("ScaleLearnedWithBias",
                "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' "
                "min: -2 max: 2 } "
                "bias_filler { type: 'uniform' min: -1 max: 1 } }",
                {uniform(shape)}, kSums),
      make_case("ScaleFromBottom", "name: 's' type: 'Scale' scale_param { axis: 1 }",
                {uniform(shape), uniform({3, 4})}, kSums),
      make_case("ScaleScalar", "name: 's' type: 'Scale' scale_param { axis: 0 num_axes: 0 }",
                {uniform(shape)}, kSums),
      make_case("BiasLearned",
                "name: 'b' type: 'Bias' bias_param { filler { type: 'uniform' min: -1 max: 1 } }",
                {uniform(shape)}, kSums),
      make_case("BiasFromBottom", "name: 'b' type: 'Bias' bias_param { axis: 0 }",
                {uniform(shape), uniform({2, 3})}, kSums),
  };
}

// Parameter's blob starts at zero; give it values to copy.
CrossDeviceCase with_random_parameter(CrossDeviceCase c) {
  c.prepare = [](Layer& layer) { testing::fill_uniform(*layer.blobs()[0], 7); };
  return c;
}

std::vector<CrossDeviceCase> shape_cases() {
  return {
      with_random_parameter(
          make_case("Parameter",
                    "name: 'p' type: 'Parameter' parameter_param { shape { dim: 3 dim: 4 } }", {})),
      // Six picks of four items: some twice, so their gradients add.
      make_case("BatchReindex", "name: 'b' type: 'BatchReindex'",
                {uniform({4, 3, 2}), labels({6}, 4)}),
      with_tops(make_case("FilterTwoBottoms", "name: 'f' type: 'Filter'",
                          {uniform({6, 3}), uniform({6, 2, 2}), labels({6, 1}, 2)}),
                2),
      make_case("InnerProduct",
                "name: 'i' type: 'InnerProduct' inner_product_param { num_output: 7 " +
                    std::string(kWeights) + " }",
                {uniform({3, 2, 3, 5})}, kSums),
      make_case(
          "InnerProductTransposedNoBias",
          "name: 'i' type: 'InnerProduct' inner_product_param { num_output: 4 transpose: true "
          "bias_term: false " +
              std::string(kWeights) + " }",
          {uniform({5, 9})}, kSums),
      make_case("InnerProductAxisTwo",
                "name: 'i' type: 'InnerProduct' inner_product_param { num_output: 3 axis: 2 " +
                    std::string(kWeights) + " }",
                {uniform({2, 3, 4, 5})}, kSums),
      make_case("Embed",
                "name: 'e' type: 'Embed' embed_param { num_output: 4 input_dim: 5 " +
                    std::string(kWeights) + " }",
                {labels({3, 4}, 5)}, kSums),
      make_case("Flatten", "name: 'f' type: 'Flatten'", {uniform({2, 3, 4, 5})}),
      make_case("Reshape",
                "name: 'r' type: 'Reshape' reshape_param { shape { dim: 0 dim: -1 dim: 2 } }",
                {uniform({2, 3, 4, 5})}),
      make_case("Tile", "name: 't' type: 'Tile' tile_param { axis: 1 tiles: 3 }",
                {uniform({2, 3, 4})}),
      make_case("Crop", "name: 'c' type: 'Crop' crop_param { axis: 2 offset: 1 offset: 2 }",
                {uniform({2, 3, 7, 8}), constant_input({2, 3, 4, 5}, 0, 1)}),
      make_case("ReductionSum",
                "name: 'r' type: 'Reduction' reduction_param { operation: SUM axis: 1 }",
                {uniform({2, 3, 4})}, kSums),
      make_case("ReductionAsumCoefficient",
                "name: 'r' type: 'Reduction' reduction_param { operation: ASUM coeff: 0.5 }",
                {uniform({2, 3, 4})}, kSums),
      make_case("ReductionSumSquares",
                "name: 'r' type: 'Reduction' reduction_param { operation: SUMSQ axis: 2 }",
                {uniform({2, 3, 4})}, kSums),
      make_case("ReductionMean",
                "name: 'r' type: 'Reduction' reduction_param { operation: MEAN axis: -1 }",
                {uniform({2, 3, 5})}, kSums),
      forward_only(make_case("ArgMaxTopTwoWithValues",
                             "name: 'a' type: 'ArgMax' argmax_param { top_k: 2 out_max_val: true }",
                             {uniform({3, 7})})),
      forward_only(make_case("ArgMaxAlongAnAxis",
                             "name: 'a' type: 'ArgMax' argmax_param { axis: 1 top_k: 2 }",
                             {uniform({2, 5, 3})})),
      forward_only(
          make_case("DummyData",
                    "name: 'd' type: 'DummyData' dummy_data_param { shape { dim: 2 dim: 3 } "
                    "data_filler { type: 'uniform' min: -1 max: 1 } }",
                    {})),
  };
}

// Recurrent layers: cont is 0/1 at random, so streams start anew inside the
// sequence too.
std::vector<CrossDeviceCase> recurrent_cases() {
  const std::string weights = std::string(kWeights) + " }";
  return {
      with_tops(make_case("LSTMUnit", "name: 'u' type: 'LSTMUnit'",
                          {uniform({1, 3, 4}), uniform({1, 3, 16}, -2, 2), labels({1, 3}, 2)}),
                2),
      make_case("RNNWithStaticInput",
                "name: 'r' type: 'RNN' recurrent_param { num_output: 3 " + weights,
                {uniform({4, 2, 3}), labels({4, 2}, 2), uniform({2, 5})}, kSums),
      make_case("LSTM", "name: 'l' type: 'LSTM' recurrent_param { num_output: 3 " + weights,
                {uniform({4, 2, 3}), labels({4, 2}, 2)}, kSums),
      with_tops(
          make_case("LSTMExposeHidden",
                    "name: 'l' type: 'LSTM' recurrent_param { num_output: 3 "
                    "expose_hidden: true " +
                        weights,
                    {uniform({3, 2, 3}), labels({3, 2}, 2), uniform({1, 2, 3}), uniform({1, 2, 3})},
                    kSums),
          3),
  };
}

std::vector<CrossDeviceCase> loss_cases() {
  const std::vector<int> scores = {6, 5};
  return {
      make_case("SoftmaxWithLoss", "name: 'l' type: 'SoftmaxWithLoss'",
                {uniform(scores, -3, 3), labels({6}, 5)}, kSums),
      make_case(
          "SoftmaxWithLossSpatialIgnoreLabel",
          "name: 'l' type: 'SoftmaxWithLoss' loss_param { ignore_label: 1 normalization: VALID }",
          {uniform({2, 4, 3, 3}, -3, 3), labels({2, 1, 3, 3}, 4)}, kSums),
      make_case("SoftmaxWithLossBatchNormalization",
                "name: 'l' type: 'SoftmaxWithLoss' loss_param { normalization: BATCH_SIZE }",
                {uniform(scores, -3, 3), labels({6}, 5)}, kSums),
      with_tops(make_case("SoftmaxWithLossProbabilityTop", "name: 'l' type: 'SoftmaxWithLoss'",
                          {uniform(scores, -3, 3), labels({6}, 5)}, kSums),
                2),
      make_case("EuclideanLoss", "name: 'l' type: 'EuclideanLoss'",
                {uniform({4, 3}), uniform({4, 3})}, kSums),
      make_case("SigmoidCrossEntropyLoss", "name: 'l' type: 'SigmoidCrossEntropyLoss'",
                {uniform(scores, -4, 4), constant_input(scores, 0, 1)}, kSums),
      make_case("HingeLossL1", "name: 'l' type: 'HingeLoss'", {uniform(scores), labels({6}, 5)},
                kSums),
      make_case("HingeLossL2", "name: 'l' type: 'HingeLoss' hinge_loss_param { norm: L2 }",
                {uniform(scores), labels({6}, 5)}, kSums),
      make_case("InfogainLoss", "name: 'l' type: 'InfogainLoss'",
                {uniform(scores, -3, 3), labels({6}, 5), constant_input({5, 5}, 0, 1)}, kSums),
      make_case("ContrastiveLoss",
                "name: 'l' type: 'ContrastiveLoss' contrastive_loss_param { margin: 1.5 }",
                {uniform({4, 3}), uniform({4, 3}), labels({4}, 2)}, kSums),
      make_case("ContrastiveLossLegacy",
                "name: 'l' type: 'ContrastiveLoss' contrastive_loss_param { legacy_version: true }",
                {uniform({4, 3}), uniform({4, 3}), labels({4}, 2)}, kSums),
      make_case("MultinomialLogisticLoss", "name: 'l' type: 'MultinomialLogisticLoss'",
                {uniform(scores, 0.05f, 1.0f), labels({6}, 5)}, kSums),
      forward_only(make_case("AccuracyTopTwo",
                             "name: 'a' type: 'Accuracy' accuracy_param { top_k: 2 }",
                             {uniform(scores), labels({6}, 5)})),
      forward_only(
          with_tops(make_case("AccuracyPerClassIgnoreLabel",
                              "name: 'a' type: 'Accuracy' accuracy_param { ignore_label: 0 }",
                              {uniform(scores), labels({6}, 5)}),
                    2)),
  };
}

// Four priors (the image's quadrants and its centre) with SSD's variances,
// and ground truth for two images: one box of class 1 on item 0, one of
// class 2 on item 1.
const std::vector<float> kPriorBoxes = {0,    0,    0.5f, 0.5f, 0.5f,  0,     1,     0.5f,
                                        0,    0.5f, 0.5f, 1,    0.25f, 0.25f, 0.75f, 0.75f,
                                        0.1f, 0.1f, 0.2f, 0.2f, 0.1f,  0.1f,  0.2f,  0.2f,
                                        0.1f, 0.1f, 0.2f, 0.2f, 0.1f,  0.1f,  0.2f,  0.2f};
const std::vector<float> kGroundTruth = {0, 1, 0, 0.05f, 0,    0.45f, 0.5f, 0,
                                         1, 2, 0, 0.3f,  0.3f, 0.8f,  0.7f, 0};

std::vector<CrossDeviceCase> detection_cases() {
  const std::string loss =
      "name: 'l' type: 'MultiBoxLoss' multibox_loss_param { num_classes: 3 code_type: "
      "CENTER_SIZE ";
  return {
      forward_only(make_case(
          "PriorBox",
          "name: 'p' type: 'PriorBox' prior_box_param { min_size: 4 max_size: 9 aspect_ratio: 2 "
          "clip: true variance: 0.1 variance: 0.1 variance: 0.2 variance: 0.2 }",
          {constant_input({1, 2, 3, 3}, 0, 1), constant_input({1, 3, 12, 12}, 0, 1)})),
      make_case("PermuteChannelsLast",
                "name: 'p' type: 'Permute' permute_param { order: 0 order: 2 order: 3 order: 1 }",
                {uniform({2, 3, 4, 5})}),
      make_case("NormalizePerPositionPerChannel",
                "name: 'n' type: 'Normalize' norm_param { across_spatial: false channel_shared: "
                "false scale_filler { type: 'uniform' min: 1 max: 20 } }",
                {uniform({2, 5, 3, 4})}, kSums),
      make_case("NormalizeAcrossSpatialShared",
                "name: 'n' type: 'Normalize' norm_param { scale_filler { type: 'constant' value: "
                "3 } }",
                {uniform({2, 5, 3, 4})}, kSums),
      make_case("MultiBoxLossMaxNegative", loss + "}",
                {uniform({2, 16}, -0.5f, 0.5f), uniform({2, 12}, -2, 2),
                 fixed({1, 2, 16}, kPriorBoxes), fixed({1, 1, 2, 8}, kGroundTruth)},
                kSums),
      make_case("MultiBoxLossLogisticNoMining",
                loss + "conf_loss_type: LOGISTIC mining_type: NONE }",
                {uniform({2, 16}, -0.5f, 0.5f), uniform({2, 12}, -2, 2),
                 fixed({1, 2, 16}, kPriorBoxes), fixed({1, 1, 2, 8}, kGroundTruth)},
                kSums),
      forward_only(make_case(
          "DetectionOutput",
          "name: 'd' type: 'DetectionOutput' detection_output_param { num_classes: 3 "
          "code_type: CENTER_SIZE nms_param { nms_threshold: 0.45 top_k: 3 } keep_top_k: 4 }",
          {uniform({2, 16}, -0.5f, 0.5f), uniform({2, 12}, 0, 1), fixed({1, 2, 16}, kPriorBoxes)})),
      make_case("UpsampleByTwo", "name: 'u' type: 'Upsample' upsample_param { scale: 2 }",
                {uniform({2, 3, 3, 5})}),
      make_case("UpsampleByThree", "name: 'u' type: 'Upsample' upsample_param { scale: 3 }",
                {uniform({1, 2, 2, 3})}),
      // Item 0's box fits anchor 2 best, item 1's anchor 1: with mask 0 1 only
      // item 1's is trained here.
      make_case("YoloLoss",
                "name: 'y' type: 'YoloLoss' yolo_param { num_classes: 2 anchors: [2, 2, 5, 4, "
                "7, 6] mask: [0, 1] img_h: 12 img_w: 12 ignore_thresh: 0.5 }",
                {uniform({2, 14, 3, 3}, -2, 2), fixed({1, 1, 2, 8}, kGroundTruth)}, kSums),
      make_case("YoloLossImageSizeFromData",
                "name: 'y' type: 'YoloLoss' yolo_param { num_classes: 2 anchors: [2, 2, 5, 4, "
                "7, 6] mask: [1, 2] truth_thresh: 0.6 }",
                {uniform({2, 14, 3, 3}, -2, 2), fixed({1, 1, 2, 8}, kGroundTruth),
                 constant_input({2, 3, 12, 12}, 0, 1)},
                kSums),
      forward_only(make_case(
          "DetectionEvaluate",
          "name: 'e' type: 'DetectionEvaluate' detection_evaluate_param { num_classes: 3 }",
          {fixed({1, 1, 3, 7}, {0, 1, 0.9f, 0.05f, 0,    0.45f, 0.5f,  //
                                0, 1, 0.4f, 0.5f,  0.5f, 1,     1,     //
                                1, 2, 0.7f, 0.3f,  0.3f, 0.8f,  0.6f}),
           fixed({1, 1, 2, 8}, kGroundTruth)})),
      forward_only(make_case(
          "YoloDetectionOutput",
          "name: 'y' type: 'YoloDetectionOutput' yolo_param { num_classes: 2 anchors: 10 "
          "anchors: 14 anchors: 23 anchors: 27 anchors: 37 anchors: 58 mask: 1 mask: 2 mask: 0 "
          "confidence_threshold: 0.3 nms_param { nms_threshold: 0.45 } keep_top_k: 10 }",
          {uniform({2, 14, 2, 3}, -3, 3), uniform({2, 7, 4, 6}, -3, 3),
           constant_input({2, 3, 32, 48}, 0, 1)})),
  };
}

std::vector<CrossDeviceCase> all_cases() {
  std::vector<CrossDeviceCase> cases;
  for (auto part :
       {convolution_cases(), pooling_cases(), normalization_cases(), neuron_cases(),
        combining_cases(), shape_cases(), recurrent_cases(), loss_cases(), detection_cases()}) {
    cases.insert(cases.end(), part.begin(), part.end());
  }
  return cases;
}

// Layer types that read or write files or user arrays, or compute nothing.
const std::set<std::string> kNotCompared = {"Data",     "AnnotatedData", "ImageData",
                                            "HDF5Data", "HDF5Output",    "MemoryData",
                                            "Input",    "WindowData"};

class CrossDeviceLayerTest : public testing::DeviceTestWithParam<CrossDeviceCase> {};

TEST_P(CrossDeviceLayerTest, MatchesTheCpu) {
  const CrossDeviceCase& c = GetParam();
  const testing::CrossDeviceDifference difference =
      testing::compare_across_devices(c, Device::cpu(), testing::current_device());
  EXPECT_LE(difference.largest, c.tolerance)
      << "CPU vs " << testing::current_device().to_string() << ", " << difference.where;
  if (!testing::current_device().is_gpu()) {
    // The same device twice: the same arithmetic, no difference at all.
    EXPECT_EQ(difference.largest, 0.0) << difference.where;
  }
}

XTRAIN_INSTANTIATE_ON_DEVICES(CrossDeviceLayerTest, ::testing::ValuesIn(all_cases()),
                              [](const ::testing::TestParamInfo<CrossDeviceCase>& param_info) {
                                return param_info.param.name;
                              });

TEST(CrossDeviceHarness, CoversEveryComputingLayerType) {
  std::set<std::string> covered;
  for (const CrossDeviceCase& c : all_cases()) {
    covered.insert(testing::layer_param_from(c.prototxt).type());
  }
  for (const std::string& type : LayerRegistry::global().types()) {
    // Layers that tests register for themselves are not built-ins.
    if (kNotCompared.count(type) || type.rfind("SolverTest", 0) == 0 ||
        type.rfind("CrossDeviceTest", 0) == 0) {
      continue;
    }
    EXPECT_TRUE(covered.count(type)) << type << " has no cross-device case";
  }
}

TEST(CrossDeviceHarness, CatchesAPerturbedLearnableBlob) {
  const CrossDeviceCase c = convolution_cases()[0];
  const auto perturb_one_weight = [](Layer& layer) {
    layer.blobs()[0]->mutable_cpu_data()[4] += 1e-2f;
  };
  const testing::CrossDeviceDifference planted =
      testing::compare_across_devices(c, Device::cpu(), Device::cpu(), perturb_one_weight);
  EXPECT_GT(planted.largest, c.tolerance) << planted.where;
  EXPECT_NE(planted.where.find("top 0"), std::string::npos) << planted.where;
  EXPECT_NONFATAL_FAILURE(EXPECT_LE(planted.largest, c.tolerance), "planted.largest");
}

// y = x; dx = gradient_scale * dy, so that a test can plant a difference in
// the bottom diff alone.
class PlantedGradientLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "CrossDeviceTestPlantedGradient"; }
  void reshape(const BlobVec& bottom, const BlobVec& top) override {
    top[0]->reshape_like(*bottom[0]);
  }
  float gradient_scale = 1.0f;

 protected:
  void forward_cpu(const BlobVec& bottom, const BlobVec& top) override {
    std::copy_n(bottom[0]->cpu_data(), bottom[0]->count(), top[0]->mutable_cpu_data());
  }
  void backward_cpu(const BlobVec& top, const std::vector<bool>& propagate_down,
                    const BlobVec& bottom) override {
    if (!propagate_down[0]) return;
    const float* dy = top[0]->cpu_diff();
    float* dx = bottom[0]->mutable_cpu_diff();
    for (std::size_t i = 0; i < top[0]->count(); ++i) dx[i] = gradient_scale * dy[i];
  }
};

TEST(CrossDeviceHarness, CatchesADifferentBottomDiff) {
  LayerRegistry& registry = LayerRegistry::global();
  if (!registry.has("CrossDeviceTestPlantedGradient")) {
    add_layer<PlantedGradientLayer>(registry, "CrossDeviceTestPlantedGradient");
  }
  const CrossDeviceCase c =
      make_case("Planted", "name: 'p' type: 'CrossDeviceTestPlantedGradient'", {uniform({3, 4})});
  EXPECT_EQ(testing::compare_across_devices(c, Device::cpu(), Device::cpu()).largest, 0.0);
  const auto plant = [](Layer& layer) {
    dynamic_cast<PlantedGradientLayer&>(layer).gradient_scale = 1.001f;
  };
  const testing::CrossDeviceDifference planted =
      testing::compare_across_devices(c, Device::cpu(), Device::cpu(), plant);
  EXPECT_NEAR(planted.largest, 1e-3, 1e-5) << planted.where;
  EXPECT_NE(planted.where.find("bottom diff 0"), std::string::npos) << planted.where;
}

}  // namespace

std::vector<testing::CrossDeviceCase> testing::every_cross_device_case() { return all_cases(); }

}  // namespace xtrain

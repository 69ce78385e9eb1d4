// The oneDNN convolution engine against the im2col + GEMM reference, shape by
// shape: forward, backward-data and backward-weights (the parameter
// gradients added onto diffs that already hold values, as Caffe's iter_size
// and shared weights need), plus how the Convolution layer picks its engine.
#include "layers/onednn_convolution.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "convolution_test_support.hpp"
#include "layer_test_support.hpp"
#include "layers/base_convolution_layer.hpp"
#include "layers/gemm_convolution.hpp"

namespace xtrain {
namespace {

using namespace convolution_testing;

struct EngineVariant {
  const char* name;
  OnednnConvolutionOptions options;
};

std::vector<EngineVariant> variants() {
  OnednnConvolutionOptions plain;
  plain.activations = OnednnConvolutionOptions::Layout::kNchw;
  OnednnConvolutionOptions channels_last;
  channels_last.activations = OnednnConvolutionOptions::Layout::kNhwc;
  OnednnConvolutionOptions first;
  first.first_implementation = true;
  OnednnConvolutionOptions onednn_choice;
  onednn_choice.activations = OnednnConvolutionOptions::Layout::kChosenByOnednn;
  return {{"default", {}},
          {"layout_chosen_by_onednn", onednn_choice},
          {"plain_activations", plain},
          {"channels_last_activations", channels_last},
          {"first_implementation", first}};
}

class OnednnConvolutionTest : public OnednnGeometryTest {};

TEST_P(OnednnConvolutionTest, MatchesGemmReference) {
  const Results expected = gemm_results();
  for (const EngineVariant& variant : variants()) {
    for (BackwardCall call : {BackwardCall::kSeparatePasses, BackwardCall::kCombined}) {
      SCOPED_TRACE(std::string(variant.name) + " " + shape_.to_string() +
                   (call == BackwardCall::kCombined ? ", combined backward" : ", separate passes"));
      std::string why_not;
      auto engine = make_onednn_convolution(shape_, variant.options, &why_not);
      ASSERT_TRUE(engine) << why_not;
      EXPECT_TRUE(starts_with(engine->name(), "onednn (forward ")) << engine->name();
      expect_matches_reference(*engine, inputs_, expected, {call});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, OnednnConvolutionTest, ::testing::ValuesIn(geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& param_info) {
                           return std::string(param_info.param.name);
                         });

// The measured exception in onednn_convolution.cpp takes effect: a first
// layer's backward-data runs on oneDNN's GEMM kernel, unless the caller asks
// for oneDNN's own first choice.
TEST(OnednnConvolutionKernelTest, FewInputChannelsUseTheGemmKernelForBackwardData) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  const ConvolutionShape shape = shape_of({"first_layer", 2, 3, 32, 32, 32, 5, 5, 1, 1, 2, 2});
  std::string why_not;
  auto preferred = make_onednn_convolution(shape, {}, &why_not);
  ASSERT_TRUE(preferred) << why_not;
  EXPECT_NE(preferred->name().find("backward-data x64:gemm"), std::string::npos)
      << preferred->name();
  OnednnConvolutionOptions first;
  first.first_implementation = true;
  auto unsteered = make_onednn_convolution(shape, first, &why_not);
  ASSERT_TRUE(unsteered) << why_not;
  EXPECT_EQ(unsteered->name().find("backward-data x64:gemm"), std::string::npos)
      << unsteered->name();
}

// The measured layout rules take effect: the blocked layout (which the Net
// then keeps between layers) by default, also for a 1x1 convolution over a
// large image (that runs as GEMMs only when asked for plain NCHW), and
// channels-last for LeNet's conv2, whose channel counts are not multiples of
// the block width. The blocked layout follows oneDNN's kernels: nChw16c for
// its AVX-512 ones, nChw8c for AVX2 (a CPU without AVX-512, or
// ONEDNN_MAX_CPU_ISA=AVX2), so the convolution prefers it at the width the
// process decided; forced to the other width, it does not.
TEST(OnednnConvolutionKernelTest, MeasuredLayoutRules) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  EXPECT_TRUE(onednn_blocks_channels_like_xtrain());
  std::string why_not;
  auto pointwise =
      make_onednn_convolution(shape_of({"pointwise", 2, 64, 56, 56, 64, 1, 1}), {}, &why_not);
  ASSERT_TRUE(pointwise) << why_not;
  EXPECT_TRUE(pointwise->prefers_channel_blocked()) << pointwise->name();
  for (int width : testing::kChannelBlockWidths) {
    testing::ScopedChannelBlock forced(width);
    auto engine =
        make_onednn_convolution(shape_of({"pointwise", 2, 64, 56, 56, 64, 1, 1}), {}, &why_not);
    ASSERT_TRUE(engine) << why_not;
    EXPECT_EQ(engine->prefers_channel_blocked(), onednn_blocks_channels_like_xtrain())
        << engine->name() << " at " << width << " channels per block";
  }
  EXPECT_EQ(pointwise->name().find("forward x64:gemm"), std::string::npos) << pointwise->name();

  OnednnConvolutionOptions plain;
  plain.activations = OnednnConvolutionOptions::Layout::kNchw;
  auto plain_pointwise =
      make_onednn_convolution(shape_of({"pointwise", 2, 64, 56, 56, 64, 1, 1}), plain, &why_not);
  ASSERT_TRUE(plain_pointwise) << why_not;
  EXPECT_FALSE(plain_pointwise->prefers_channel_blocked());
  EXPECT_NE(plain_pointwise->name().find("forward x64:gemm"), std::string::npos)
      << plain_pointwise->name();

  auto lenet_conv2 =
      make_onednn_convolution(shape_of({"lenet conv2", 64, 20, 12, 12, 50, 5, 5}), {}, &why_not);
  ASSERT_TRUE(lenet_conv2) << why_not;
  EXPECT_FALSE(lenet_conv2->prefers_channel_blocked()) << lenet_conv2->name();
}

class OnednnConvolutionAccumulationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
    shape_ = shape_of({"blocked", 2, 16, 6, 6, 32, 3, 3, 1, 1, 1, 1});
    std::string why_not;
    engine_ = make_onednn_convolution(shape_, {}, &why_not);
    ASSERT_TRUE(engine_) << why_not;
  }
  ConvolutionShape shape_;
  std::unique_ptr<ConvolutionEngine> engine_;
};

// Two backward passes (iter_size 2, or two bottoms sharing weights) add up.
TEST_F(OnednnConvolutionAccumulationTest, RepeatedBackwardAddsUp) {
  const Inputs in(shape_);
  GemmConvolution gemm(shape_);
  std::vector<float> weight_diff(shape_.weight_count(), 0.0f), bias_diff(shape_.num_output, 0.0f);
  gemm.backward_weights(in.bottom.data(), in.top_diff.data(), weight_diff.data(), bias_diff.data());
  std::vector<float> twice_weights = in.weight_diff, twice_bias = in.bias_diff;
  for (std::size_t i = 0; i < twice_weights.size(); ++i) twice_weights[i] += 2 * weight_diff[i];
  for (std::size_t i = 0; i < twice_bias.size(); ++i) twice_bias[i] += 2 * bias_diff[i];

  std::vector<float> actual_weights = in.weight_diff, actual_bias = in.bias_diff;
  for (int pass = 0; pass < 2; ++pass) {
    engine_->backward_weights(in.bottom.data(), in.top_diff.data(), actual_weights.data(),
                              actual_bias.data());
  }
  expect_close(actual_weights, twice_weights, "weight gradient after two passes");
  expect_close(actual_bias, twice_bias, "bias gradient after two passes");
}

// With lr_mult 0 on one of the two blobs, only the other diff changes.
TEST_F(OnednnConvolutionAccumulationTest, OneGradientAtATime) {
  const Inputs in(shape_);
  GemmConvolution gemm(shape_);
  std::vector<float> expected_weights = in.weight_diff, expected_bias = in.bias_diff;
  gemm.backward_weights(in.bottom.data(), in.top_diff.data(), expected_weights.data(),
                        expected_bias.data());

  std::vector<float> weights_only = in.weight_diff;
  engine_->backward_weights(in.bottom.data(), in.top_diff.data(), weights_only.data(), nullptr);
  expect_close(weights_only, expected_weights, "weight gradient alone");

  std::vector<float> bias_only = in.bias_diff;
  engine_->backward_weights(in.bottom.data(), in.top_diff.data(), nullptr, bias_only.data());
  expect_close(bias_only, expected_bias, "bias gradient alone");
}

// The engine a Convolution layer picks for a 2x16x8x8 input (about 1 MFLOP
// per forward pass), or for a 1x2x4x4 one (a few hundred FLOPs).
std::string engine_chosen(const std::string& extra_param = "", bool tiny = false) {
  auto layer = testing::make_layer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 32 kernel_size: 3 "
      "pad: 1 " +
      extra_param + " weight_filler { type: 'gaussian' std: 0.1 } }");
  Blob input(tiny ? std::vector<int>{1, 2, 4, 4} : std::vector<int>{2, 16, 8, 8}), output;
  layer->setup({&input}, {&output});
  return dynamic_cast<BaseConvolutionLayer&>(*layer).engine_name();
}

TEST(ConvolutionEngineChoiceTest, DefaultIsOnednnWhereAvailable) {
  const std::string expected = onednn_available() ? "onednn (" : "gemm";
  for (const char* value : {static_cast<const char*>(nullptr), "auto", "onednn"}) {
    testing::ScopedConvImpl choice(value);
    const std::string chosen = engine_chosen();
    EXPECT_TRUE(starts_with(chosen, expected)) << (value ? value : "unset") << ": " << chosen;
  }
}

TEST(ConvolutionEngineChoiceTest, TinyShapesStayOnGemmUnlessOnednnIsForced) {
  {
    testing::ScopedConvImpl unset(nullptr);
    EXPECT_EQ(engine_chosen("", /*tiny=*/true), "gemm");
  }
  testing::ScopedConvImpl onednn("onednn");
  const std::string expected = onednn_available() ? "onednn (" : "gemm";
  const std::string chosen = engine_chosen("", /*tiny=*/true);
  EXPECT_TRUE(starts_with(chosen, expected)) << chosen;
}

TEST(ConvolutionEngineChoiceTest, GemmOnRequest) {
  testing::ScopedConvImpl gemm("gemm");
  EXPECT_EQ(engine_chosen(), "gemm");
}

TEST(ConvolutionEngineChoiceTest, ForceNdIm2colKeepsGemm) {
  testing::ScopedConvImpl onednn("onednn");
  EXPECT_EQ(engine_chosen("force_nd_im2col: true"), "gemm");
}

TEST(ConvolutionEngineChoiceTest, RejectsUnknownEngine) {
  testing::ScopedConvImpl bad("mkl");
  const std::string message = testing::error_of([] { engine_chosen(); });
  EXPECT_NE(message.find("XTRAIN_CONV_IMPL=mkl"), std::string::npos) << message;
  EXPECT_NE(message.find("'gemm'"), std::string::npos) << message;
  EXPECT_NE(message.find("'onednn'"), std::string::npos) << message;
}

// A new input shape gets an engine made for it.
TEST(ConvolutionEngineChoiceTest, ReshapeRemakesTheEngine) {
  auto layer = testing::make_layer(
      "name: 'conv' type: 'Convolution' convolution_param { num_output: 4 kernel_size: 3 "
      "weight_filler { type: 'gaussian' std: 0.1 } bias_filler { type: 'gaussian' std: 0.1 } }");
  Blob small({1, 2, 5, 5}), large({3, 2, 9, 7}), output;
  layer->setup({&small}, {&output});
  testing::fill_uniform(large, 1701);
  layer->reshape({&large}, {&output});
  layer->forward({&large}, {&output});
  ASSERT_EQ(output.shape(), (std::vector<int>{3, 4, 7, 5}));

  ConvolutionShape shape = shape_of({"large", 3, 2, 9, 7, 4, 3, 3});
  GemmConvolution gemm(shape);
  std::vector<float> expected(output.count());
  gemm.forward(large.cpu_data(), layer->blobs()[0]->cpu_data(), layer->blobs()[1]->cpu_data(),
               expected.data());
  expect_close(testing::data_of(output), expected, "forward after reshape");
}

}  // namespace
}  // namespace xtrain

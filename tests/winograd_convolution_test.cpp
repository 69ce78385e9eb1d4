// WinogradConvolution, F(2x2, 5x5): forward and backward-data at every
// instruction set this machine has match the im2col + GEMM reference (within
// the float tolerance the other fast engines meet), for batches that do not
// fill a group of 8 images, odd output sizes (a last tile half used), every
// padding from 0 to 4 and output counts that do not fill a packing block; it
// declines what it does not compute; it reads and writes channel-blocked
// activations at both block widths (alone, and beside oneDNN's blocked
// weight gradient); and a timed choice may name it.
#include "layers/winograd_convolution.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "convolution_test_support.hpp"
#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "error_message.hpp"
#include "layers/convolution_search.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/onednn_convolution.hpp"

namespace xtrain {
namespace {

using namespace convolution_testing;
using xtrain::testing::ScopedCpuIsaCap;

// Geometry{name, N, C, H, W, num_output, kh, kw, sh, sw, ph, pw, dh, dw, group, bias}
std::vector<Geometry> winograd_geometries() {
  return {
      {"cifar10_conv2", 9, 32, 16, 16, 32, 5, 5, 1, 1, 2, 2},
      {"cifar10_conv3", 3, 32, 8, 8, 64, 5, 5, 1, 1, 2, 2},
      {"lenet_conv2_odd_batch", 11, 20, 12, 12, 50, 5, 5},
      {"odd_sizes_wide_rows", 2, 3, 9, 21, 6, 5, 5, 1, 1, 1, 3},
      {"full_padding_no_bias", 1, 2, 5, 7, 3, 5, 5, 1, 1, 4, 4, 1, 1, 1, false},
      {"one_output_pixel", 8, 4, 5, 5, 5, 5, 5},
  };
}

class WinogradConvolutionTest : public GeometryTest {};

// `values` of `channels` x `spatial` per image, from plain into `layout`, or
// from `layout` back to plain.
enum class Direction { kIntoLayout, kBackToPlain };
std::vector<float> convert(const std::vector<float>& values, MemoryLayout layout,
                           Direction direction, int num, int channels, int spatial) {
  if (layout == MemoryLayout::kPlain) return values;
  const ChannelBlockedShape blocked{num, channels, spatial};
  return direction == Direction::kIntoLayout ? xtrain::testing::to_blocked(blocked, values)
                                             : xtrain::testing::to_plain(blocked, values);
}

// Runs forward_in and backward_in with the activations in `layouts`; the
// results come back plain.
Results run_in(ConvolutionEngine& engine, const Inputs& in,
               const ConvolutionEngine::Layouts& layouts) {
  const ConvolutionShape& shape = engine.shape();
  const int channels = shape.geometry.channels, outputs = shape.num_output;
  const int in_spatial = shape.geometry.height * shape.geometry.width;
  const int out_spatial = shape.out_height() * shape.out_width();
  const std::vector<float> bottom =
      convert(in.bottom, layouts.bottom, Direction::kIntoLayout, shape.num, channels, in_spatial);
  const std::vector<float> top_diff =
      convert(in.top_diff, layouts.top, Direction::kIntoLayout, shape.num, outputs, out_spatial);
  std::vector<float> top(shape.num * shape.output_dim(), 7.0f);
  std::vector<float> bottom_diff(shape.num * shape.input_dim(), 7.0f);
  Results out;
  out.weight_diff = in.weight_diff;
  out.bias_diff = in.bias_diff;
  engine.forward_in(layouts, bottom.data(), in.weights.data(), in.bias.data(), top.data());
  engine.backward_in(layouts, bottom.data(), top_diff.data(), in.weights.data(),
                     out.weight_diff.data(), shape.bias_term ? out.bias_diff.data() : nullptr,
                     bottom_diff.data());
  out.top = convert(top, layouts.top, Direction::kBackToPlain, shape.num, outputs, out_spatial);
  out.bottom_diff = convert(bottom_diff, layouts.bottom, Direction::kBackToPlain, shape.num,
                            channels, in_spatial);
  return out;
}

void expect_close_results(const Results& actual, const Results& expected) {
  expect_close(actual.top, expected.top, "forward");
  expect_close(actual.bottom_diff, expected.bottom_diff, "backward data");
  expect_close(actual.weight_diff, expected.weight_diff, "weight gradient");
  expect_close(actual.bias_diff, expected.bias_diff, "bias gradient");
}

// Every combination of layouts the Net may hand the engine: blocked on
// either side where the channel count allows, at both block widths.
void expect_matches_reference_in_every_layout(ConvolutionEngine& engine, const Inputs& inputs,
                                              const Results& expected) {
  const ConvolutionShape& shape = engine.shape();
  for (int block : xtrain::testing::kChannelBlockWidths) {
    xtrain::testing::ScopedChannelBlock width(block);
    for (MemoryLayout bottom : {MemoryLayout::kPlain, MemoryLayout::kChannelBlocked}) {
      for (MemoryLayout top : {MemoryLayout::kPlain, MemoryLayout::kChannelBlocked}) {
        const bool blocked_bottom = bottom == MemoryLayout::kChannelBlocked;
        const bool blocked_top = top == MemoryLayout::kChannelBlocked;
        if (blocked_bottom && !channels_can_be_blocked(shape.geometry.channels)) continue;
        if (blocked_top && !channels_can_be_blocked(shape.num_output)) continue;
        SCOPED_TRACE(::testing::Message() << "block " << block << ", bottom "
                                          << (bottom == MemoryLayout::kPlain ? "plain" : "blocked")
                                          << ", top "
                                          << (top == MemoryLayout::kPlain ? "plain" : "blocked"));
        expect_close_results(run_in(engine, inputs, {bottom, top}), expected);
      }
    }
  }
}

// Plain arrays (each pass alone and both backward passes in one call), then
// every layout combination the Net may hand the engine.
TEST_P(WinogradConvolutionTest, MatchesTheReferenceInEveryLayoutAtEveryLevel) {
  ASSERT_TRUE(WinogradConvolution::accepts(shape_)) << shape_.to_string();
  const Results expected = gemm_results();
  for (CpuIsa level : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (level > detected_cpu_isa()) continue;
    SCOPED_TRACE(cpu_isa_name(level));
    ScopedCpuIsaCap cap(level);
    WinogradConvolution winograd(shape_);
    expect_matches_reference(winograd, inputs_, expected);
    EXPECT_TRUE(winograd.accepts_channel_blocked());
    EXPECT_FALSE(winograd.prefers_channel_blocked()) << "alone it is a plain engine";
    expect_matches_reference_in_every_layout(winograd, inputs_, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, WinogradConvolutionTest,
                         ::testing::ValuesIn(winograd_geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& param_info) {
                           return std::string(param_info.param.name);
                         });

TEST(WinogradConvolutionShapesTest, DeclinesWhatItDoesNotComputeAndSaysWhy) {
  // Geometry{name, N, C, H, W, num_output, kh, kw, sh, sw, ph, pw, dh, dw, group, bias}
  const std::vector<std::pair<Geometry, std::string>> refused = {
      {{"kernel", 2, 3, 28, 28, 4, 3, 3}, "not 5x5"},
      {{"stride", 2, 3, 28, 28, 4, 5, 5, 2, 2}, "stride"},
      {{"dilation", 2, 3, 28, 28, 4, 5, 5, 1, 1, 0, 0, 2, 2}, "dilated"},
      {{"groups", 2, 4, 28, 28, 4, 5, 5, 1, 1, 0, 0, 1, 1, 2}, "groups"},
  };
  for (const auto& [geometry, reason] : refused) {
    std::string why_not;
    EXPECT_FALSE(WinogradConvolution::accepts(shape_of(geometry), &why_not)) << geometry.name;
    EXPECT_NE(why_not.find(reason), std::string::npos) << geometry.name << ": " << why_not;
  }
}

// A choice naming Winograd for forward and backward-data (as the timed
// search may make it, or a cache file holds it) builds an engine that
// computes them so, with another engine's weight gradient.
TEST(WinogradConvolutionChoiceTest, MixesWithGemmPerPass) {
  const ConvolutionShape shape = shape_of({"cifar10_conv2", 3, 8, 16, 16, 8, 5, 5, 1, 1, 2, 2});
  const Inputs inputs(shape);
  GemmConvolution gemm(shape);
  const Results expected = run(gemm, inputs);

  ConvolutionChoice mixed;
  mixed.engines = {WinogradConvolution::kName, WinogradConvolution::kName,
                   ConvolutionChoice::kGemm};
  auto engine = make_chosen_convolution(shape, mixed);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kernel(ConvolutionPass::kForward), "winograd");
  EXPECT_EQ(engine->kernel(ConvolutionPass::kBackwardData), "winograd");
  EXPECT_EQ(engine->kernel(ConvolutionPass::kBackwardWeights), "gemm");
  expect_matches_reference(*engine, inputs, expected);

  const std::optional<ConvolutionChoice> read = ConvolutionChoice::parse(mixed.to_string());
  ASSERT_TRUE(read);
  EXPECT_EQ(read->engines, mixed.engines);
}

// Beside oneDNN's weight gradient in its blocked layout (a choice the timed
// search makes for blocked neighbours), the engine keeps the activations
// channel-blocked and computes every pass right in each layout.
TEST(WinogradConvolutionChoiceTest, BesideOnednnsBlockedWeightGradientKeepsActivationsBlocked) {
  if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  const ConvolutionShape shape = shape_of({"cifar10_conv2", 9, 32, 16, 16, 32, 5, 5, 1, 1, 2, 2});
  const Inputs inputs(shape);
  GemmConvolution gemm(shape);
  const Results expected = run(gemm, inputs);

  using Layout = OnednnConvolutionOptions::Layout;
  const std::vector<std::string> weight_kernels = onednn_convolution_implementations(
      shape, Layout::kChosenByOnednn, ConvolutionPass::kBackwardWeights);
  ASSERT_FALSE(weight_kernels.empty());
  ConvolutionChoice mixed;
  mixed.layout = Layout::kChosenByOnednn;
  mixed.engines = {WinogradConvolution::kName, WinogradConvolution::kName, weight_kernels[0]};
  auto engine = make_chosen_convolution(shape, mixed);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kernel(ConvolutionPass::kForward), "winograd");
  EXPECT_EQ(engine->kernel(ConvolutionPass::kBackwardWeights), weight_kernels[0]);
  EXPECT_TRUE(engine->accepts_channel_blocked());
  if (onednn_blocks_channels_like_xtrain()) {
    EXPECT_TRUE(engine->prefers_channel_blocked()) << "oneDNN's kernels compute blocked";
  }
  // oneDNN computes in the process's block width, so only that one here.
  for (MemoryLayout layout : {MemoryLayout::kPlain, MemoryLayout::kChannelBlocked}) {
    SCOPED_TRACE(layout == MemoryLayout::kPlain ? "plain" : "blocked");
    expect_close_results(run_in(*engine, inputs, {layout, layout}), expected);
  }
}

// The timed search tries Winograd unless XTRAIN_CPU_WINOGRAD=0 (the
// engines it offers are part of the cache key, so the two never share
// choices), and a value it cannot read is an error naming the variable.
TEST(WinogradConvolutionChoiceTest, OfferedToTheSearchUnlessTurnedOff) {
  {
    xtrain::testing::ScopedEnvironment unset("XTRAIN_CPU_WINOGRAD", nullptr);
    EXPECT_NE(own_convolution_engines().find("winograd"), std::string::npos);
  }
  {
    xtrain::testing::ScopedEnvironment on("XTRAIN_CPU_WINOGRAD", "1");
    EXPECT_NE(own_convolution_engines().find("winograd"), std::string::npos);
  }
  {
    xtrain::testing::ScopedEnvironment off("XTRAIN_CPU_WINOGRAD", "0");
    EXPECT_EQ(own_convolution_engines().find("winograd"), std::string::npos);
  }
  xtrain::testing::ScopedEnvironment wrong("XTRAIN_CPU_WINOGRAD", "yes");
  testing::expect_error([] { own_convolution_engines(); }, {"XTRAIN_CPU_WINOGRAD=yes", "0 or 1"});
}

}  // namespace
}  // namespace xtrain

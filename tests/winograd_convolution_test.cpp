// WinogradConvolution, F(2x2, 5x5): forward and backward-data at every
// instruction set this machine has match the im2col + GEMM reference (within
// the float tolerance the other fast engines meet), for batches that do not
// fill a group of 8 images, odd output sizes (a last tile half used), every
// padding from 0 to 4 and output counts that do not fill a packing block; it
// declines what it does not compute; and a timed choice may name it.
#include "layers/winograd_convolution.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "convolution_test_support.hpp"
#include "core/cpu_isa.hpp"
#include "error_message.hpp"
#include "layers/convolution_search.hpp"
#include "layers/gemm_convolution.hpp"

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

TEST_P(WinogradConvolutionTest, ForwardAndBackwardDataMatchTheReferenceAtEveryLevel) {
  ASSERT_TRUE(WinogradConvolution::accepts(shape_)) << shape_.to_string();
  const Results expected = gemm_results();
  for (CpuIsa level : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (level > detected_cpu_isa()) continue;
    SCOPED_TRACE(cpu_isa_name(level));
    ScopedCpuIsaCap cap(level);
    WinogradConvolution winograd(shape_);
    expect_matches_reference(winograd, inputs_, expected);
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

// The timed search tries Winograd only when XTRAIN_CPU_WINOGRAD=1 (the
// engines it offers are part of the cache key, so the two never share
// choices), and a value it cannot read is an error naming the variable.
TEST(WinogradConvolutionChoiceTest, OfferedToTheSearchOnlyWhenAskedFor) {
  {
    xtrain::testing::ScopedEnvironment unset("XTRAIN_CPU_WINOGRAD", nullptr);
    EXPECT_EQ(own_convolution_engines().find("winograd"), std::string::npos);
  }
  {
    xtrain::testing::ScopedEnvironment off("XTRAIN_CPU_WINOGRAD", "0");
    EXPECT_EQ(own_convolution_engines().find("winograd"), std::string::npos);
  }
  {
    xtrain::testing::ScopedEnvironment on("XTRAIN_CPU_WINOGRAD", "1");
    EXPECT_NE(own_convolution_engines().find("winograd"), std::string::npos);
  }
  xtrain::testing::ScopedEnvironment wrong("XTRAIN_CPU_WINOGRAD", "yes");
  testing::expect_error([] { own_convolution_engines(); }, {"XTRAIN_CPU_WINOGRAD=yes", "0 or 1"});
}

}  // namespace
}  // namespace xtrain

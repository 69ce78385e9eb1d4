// DirectConvolution, our kernels for convolutions of few input channels:
// every pass at every instruction set and vector width this machine has
// matches the im2col + GEMM reference; it declines what it does not compute;
// and the timed search's choices may name it for any pass.
#include "layers/direct_convolution.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "convolution_test_support.hpp"
#include "core/cpu_isa.hpp"
#include "layers/convolution_search.hpp"
#include "layers/gemm_convolution.hpp"

namespace xtrain {
namespace {

using namespace convolution_testing;
using xtrain::testing::ScopedCpuIsaCap;

// Geometry{name, N, C, H, W, num_output, kh, kw, sh, sw, ph, pw, dh, dw, group, bias}
std::vector<Geometry> direct_geometries() {
  return {
      {"lenet_conv1", 3, 1, 28, 28, 20, 5, 5},
      {"cifar10_conv1", 2, 3, 32, 32, 32, 5, 5, 1, 1, 2, 2},
      // Rows whose chunks overlap (13 = 8 + 5), a kernel row split into
      // runs (11 = 4 + 4 + 3), outputs not a multiple of the packing block.
      {"overlapping_rows_long_kernel", 2, 2, 9, 23, 5, 3, 11, 1, 1, 1, 5},
      {"exactly_one_vector_wide", 2, 4, 10, 20, 6, 3, 5, 1, 1, 0, 0},
      {"one_by_one", 2, 3, 5, 17, 7, 1, 1},
      {"no_bias_one_image", 1, 2, 18, 18, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, false},
      {"more_images_than_threads_odd", 5, 1, 20, 19, 3, 4, 2, 1, 1, 3, 1},
  };
}

class DirectConvolutionTest : public GeometryTest {};

TEST_P(DirectConvolutionTest, EveryWidthAtEveryLevelMatchesTheReference) {
  const Results expected = gemm_results();
  int tried = 0;
  for (CpuIsa level : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (level > detected_cpu_isa()) continue;
    ScopedCpuIsaCap cap(level);
    for (int lanes : DirectConvolution::lane_widths_for(shape_)) {
      SCOPED_TRACE(std::string(cpu_isa_name(level)) + ", " + DirectConvolution::name_for(lanes));
      DirectConvolution direct(shape_, lanes);
      EXPECT_EQ(direct.name(), DirectConvolution::name_for(lanes));
      expect_matches_reference(direct, inputs_, expected);
      ++tried;
    }
  }
  EXPECT_GT(tried, 0) << "no width took " << shape_.to_string();
}

INSTANTIATE_TEST_SUITE_P(Geometries, DirectConvolutionTest,
                         ::testing::ValuesIn(direct_geometries()),
                         [](const ::testing::TestParamInfo<Geometry>& param_info) {
                           return std::string(param_info.param.name);
                         });

TEST(DirectConvolutionShapesTest, DeclinesWhatItDoesNotComputeAndSaysWhy) {
  // Geometry{name, N, C, H, W, num_output, kh, kw, sh, sw, ph, pw, dh, dw, group, bias}
  const std::vector<std::pair<Geometry, std::string>> refused = {
      {{"channels", 2, 5, 28, 28, 4, 3, 3}, "more than 4 input channels"},
      {{"stride", 2, 3, 28, 28, 4, 3, 3, 2, 2}, "stride"},
      {{"dilation", 2, 3, 28, 28, 4, 3, 3, 1, 1, 0, 0, 2, 2}, "dilated"},
      {{"groups", 2, 4, 28, 28, 4, 3, 3, 1, 1, 0, 0, 1, 1, 2}, "groups"},
      {{"pad", 2, 1, 28, 28, 4, 3, 3, 1, 1, 3, 3}, "padding"},
      {{"narrow", 2, 1, 5, 5, 4, 3, 3}, "narrower than a vector"},
  };
  for (const auto& [geometry, reason] : refused) {
    const ConvolutionShape shape = shape_of(geometry);
    EXPECT_TRUE(DirectConvolution::lane_widths_for(shape).empty()) << geometry.name;
    std::string why_not;
    EXPECT_FALSE(DirectConvolution::accepts(shape, 4, &why_not)) << geometry.name;
    EXPECT_NE(why_not.find(reason), std::string::npos) << geometry.name << ": " << why_not;
  }
  std::string why_not;
  EXPECT_FALSE(DirectConvolution::accepts(shape_of({"lenet", 2, 1, 28, 28, 20, 5, 5}), 12,
                                          &why_not));
  EXPECT_NE(why_not.find("no kernel of that width"), std::string::npos) << why_not;
}

TEST(DirectConvolutionShapesTest, NamesReadBack) {
  for (int lanes : {4, 8, 16}) {
    EXPECT_EQ(DirectConvolution::lanes_of(DirectConvolution::name_for(lanes)), lanes);
  }
  EXPECT_EQ(DirectConvolution::lanes_of("direct32"), 0);
  EXPECT_EQ(DirectConvolution::lanes_of("im2col_gemm"), 0);
  EXPECT_EQ(DirectConvolution::lanes_of("direct"), 0);
}

// A choice naming the direct kernel for some passes (as the timed search may
// make it, or a cache file holds it) builds an engine that computes them so.
TEST(DirectConvolutionChoiceTest, MixesWithGemmPerPass) {
  const ConvolutionShape shape = shape_of({"lenet_conv1", 2, 1, 28, 28, 20, 5, 5});
  const std::string direct =
      DirectConvolution::name_for(DirectConvolution::lane_widths_for(shape).front());
  const Inputs inputs(shape);
  GemmConvolution gemm(shape);
  const Results expected = run(gemm, inputs);

  ConvolutionChoice all_direct;
  all_direct.engines.fill(direct);
  auto alone = make_chosen_convolution(shape, all_direct);
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->name(), direct);
  expect_matches_reference(*alone, inputs, expected);

  ConvolutionChoice mixed;
  mixed.engines = {ConvolutionChoice::kGemm, ConvolutionChoice::kGemm, direct};
  auto engine = make_chosen_convolution(shape, mixed);
  ASSERT_TRUE(engine);
  EXPECT_EQ(engine->kernel(ConvolutionPass::kForward), "gemm");
  EXPECT_EQ(engine->kernel(ConvolutionPass::kBackwardWeights), direct);
  expect_matches_reference(*engine, inputs, expected);

  const std::optional<ConvolutionChoice> read = ConvolutionChoice::parse(mixed.to_string());
  ASSERT_TRUE(read);
  EXPECT_EQ(read->engines, mixed.engines);
}

TEST(DirectConvolutionChoiceTest, AWidthThisCpuLacksIsNotBuilt) {
  const ConvolutionShape shape = shape_of({"lenet_conv1", 2, 1, 28, 28, 20, 5, 5});
  ConvolutionChoice choice;
  choice.engines = {ConvolutionChoice::kGemm, ConvolutionChoice::kGemm, "direct16"};
  ScopedCpuIsaCap cap(CpuIsa::kAvx2);
  EXPECT_EQ(make_chosen_convolution(shape, choice), nullptr);
}

}  // namespace
}  // namespace xtrain

// The channel-blocked pooling kernels (pooling_blocked_kernels.hpp) against
// the plain reference kernels, bit for bit: random plain inputs go to the
// blocked layout, through the blocked kernel, back to plain, and must equal
// the reference's outputs, argmax masks and input gradients exactly, with
// the outputs written blocked and plain. The shapes reach ceil-mode windows
// hanging past the image, padding 1 and 2, uneven kernels and strides,
// empty windows, global pooling, 1x1 maps, batch 1 and 16 to 64 channels
// (24 at 8 per block); the inputs hold ties, -inf and NaN. The results must
// not depend on the thread count. Every test runs at both block widths (8
// and 16 channels) and with each instruction set's copy of the kernels that
// this CPU can run (AVX-512, AVX2, baseline).
#include "layers/pooling_blocked_kernels.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/channel_blocked_layout.hpp"
#include "core/cpu_isa.hpp"
#include "fast_path_test_support.hpp"
#include "layers/pooling_kernels.hpp"
#include "pooling_test_support.hpp"

namespace xtrain {
namespace {

struct BlockedPoolCase {
  int num, channels, height, width;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
  bool global;
  bool floor = false;  // round_mode FLOOR (PyTorch's rounding) instead of CEIL
};

std::ostream& operator<<(std::ostream& out, const BlockedPoolCase& c) {
  return out << c.num << "x" << c.channels << "x" << c.height << "x" << c.width << " kernel "
             << c.kernel_h << "x" << c.kernel_w << " pad " << c.pad_h << "x" << c.pad_w
             << " stride " << c.stride_h << "x" << c.stride_w << (c.global ? " global" : "")
             << (c.floor ? " floor" : "");
}

PoolingGeometry geometry_of(const BlockedPoolCase& c) {
  return testing::pooling_geometry(c.num * c.channels, c.height, c.width, c.kernel_h, c.kernel_w,
                                   c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.global, !c.floor);
}

using Values = testing::PoolValues;

// The -inf run covers every channel of the first images.
std::vector<float> random_values(std::size_t count, Values kind, std::uint32_t seed) {
  return testing::random_pool_values(count, kind, seed, /*run_divisor=*/3);
}

ChannelBlockedShape shape_of(const BlockedPoolCase& c, int height, int width) {
  ChannelBlockedShape shape;
  shape.num = c.num;
  shape.channels = c.channels;
  shape.spatial = static_cast<std::int64_t>(height) * width;
  return shape;
}

using testing::to_blocked;
using testing::to_plain;

// The masks are ints: moved element by element with the layout's formula.
std::vector<int> to_plain(const ChannelBlockedShape& shape, const std::vector<int>& blocked) {
  std::vector<int> plain(blocked.size());
  for (std::int64_t n = 0; n < shape.num; ++n) {
    for (std::int64_t c = 0; c < shape.channels; ++c) {
      for (std::int64_t s = 0; s < shape.spatial; ++s) {
        plain[(n * shape.channels + c) * shape.spatial + s] = blocked[shape.blocked_index(n, c, s)];
      }
    }
  }
  return plain;
}

void expect_same(const std::vector<float>& blocked, const std::vector<float>& reference,
                 const char* what, const BlockedPoolCase& c, bool output_blocked) {
  std::ostringstream context;
  context << what << " (" << c << ", output " << (output_blocked ? "blocked" : "plain") << ")";
  testing::expect_same_bits_or_nan(blocked, reference, context.str());
}

enum class Pool { kMax, kAverage };

// Runs MAX or AVE forward and backward, blocked; returns the plain output,
// mask (MAX only) and input gradient.
struct BlockedResults {
  std::vector<float> output;
  std::vector<int> mask;
  std::vector<float> input_diff;
};

BlockedResults run_blocked(Pool pool, const BlockedPoolCase& c, const std::vector<float>& input,
                           const std::vector<float>& top_diff, bool output_blocked) {
  const bool max = pool == Pool::kMax;
  const PoolingGeometry g = geometry_of(c);
  const ChannelBlockedShape in_shape = shape_of(c, g.height, g.width);
  const ChannelBlockedShape out_shape = shape_of(c, g.pooled_h, g.pooled_w);
  const std::vector<float> blocked_input = to_blocked(in_shape, input);
  std::vector<float> output(top_diff.size(), 7.0f);
  std::vector<int> mask(max ? top_diff.size() : 0, 12345);
  std::vector<float> input_diff(input.size(), 7.0f);
  const std::vector<float> diff_in_layout =
      output_blocked ? to_blocked(out_shape, top_diff) : top_diff;
  if (max) {
    max_pool_forward_blocked(g, c.channels, blocked_input.data(), output.data(), mask.data(),
                             output_blocked);
    max_pool_backward_blocked(g, c.channels, diff_in_layout.data(), mask.data(), input_diff.data(),
                              output_blocked);
  } else {
    average_pool_forward_blocked(g, c.channels, blocked_input.data(), output.data(),
                                 output_blocked);
    average_pool_backward_blocked(g, c.channels, diff_in_layout.data(), input_diff.data(),
                                  output_blocked);
  }
  BlockedResults results;
  results.output = output_blocked ? to_plain(out_shape, output) : output;
  if (max) results.mask = output_blocked ? to_plain(out_shape, mask) : mask;
  results.input_diff = to_plain(in_shape, input_diff);
  return results;
}

std::size_t input_count(const BlockedPoolCase& c) {
  return static_cast<std::size_t>(c.num) * c.channels * c.height * c.width;
}

std::size_t output_count(const BlockedPoolCase& c) {
  const PoolingGeometry g = geometry_of(c);
  return static_cast<std::size_t>(g.planes) * g.pooled_h * g.pooled_w;
}

void expect_max_pool_matches(const BlockedPoolCase& c, Values kind, std::uint32_t seed) {
  const PoolingGeometry g = geometry_of(c);
  ASSERT_GT(g.pooled_h, 0);
  ASSERT_GT(g.pooled_w, 0);
  const std::vector<float> input = random_values(input_count(c), kind, seed);
  const std::vector<float> top_diff = random_values(output_count(c), Values::kUniform, seed + 1);

  std::vector<float> out_ref(output_count(c));
  std::vector<int> mask_ref(output_count(c));
  max_pool_forward_reference(g, input.data(), out_ref.data(), nullptr, mask_ref.data());
  std::vector<float> diff_ref(input_count(c));
  max_pool_backward_reference(g, top_diff.data(), nullptr, mask_ref.data(), diff_ref.data());

  for (bool output_blocked : {true, false}) {
    const BlockedResults blocked = run_blocked(Pool::kMax, c, input, top_diff, output_blocked);
    expect_same(blocked.output, out_ref, "MAX output", c, output_blocked);
    ASSERT_EQ(blocked.mask, mask_ref) << c << ", output " << (output_blocked ? "blocked" : "plain");
    expect_same(blocked.input_diff, diff_ref, "MAX input diff", c, output_blocked);
  }
}

void expect_average_pool_matches(const BlockedPoolCase& c, Values kind, std::uint32_t seed) {
  const PoolingGeometry g = geometry_of(c);
  const std::vector<float> input = random_values(input_count(c), kind, seed);
  const std::vector<float> top_diff = random_values(output_count(c), Values::kUniform, seed + 1);

  std::vector<float> out_ref(output_count(c));
  average_pool_forward_reference(g, input.data(), out_ref.data());
  std::vector<float> diff_ref(input_count(c));
  average_pool_backward_reference(g, top_diff.data(), diff_ref.data());

  for (bool output_blocked : {true, false}) {
    const BlockedResults blocked = run_blocked(Pool::kAverage, c, input, top_diff, output_blocked);
    expect_same(blocked.output, out_ref, "AVE output", c, output_blocked);
    expect_same(blocked.input_diff, diff_ref, "AVE input diff", c, output_blocked);
  }
}

// num, channels, height, width, kernel h/w, pad h/w, stride h/w, global.
const BlockedPoolCase kCases[] = {
    {3, 32, 32, 32, 3, 3, 0, 0, 2, 2, false},  // CIFAR-10 pool1: ceil mode hangs over
    {2, 32, 16, 16, 3, 3, 0, 0, 2, 2, false},  // CIFAR-10 pool2
    {2, 64, 8, 8, 3, 3, 0, 0, 2, 2, false},    // CIFAR-10 pool3
    {3, 16, 24, 24, 2, 2, 0, 0, 2, 2, false},  // LeNet-like 2x2 stride 2
    {2, 48, 13, 7, 3, 3, 1, 1, 2, 2, false},   // odd sizes, pad 1
    {1, 16, 19, 23, 5, 5, 2, 2, 2, 2, false},  // batch 1, pad 2
    {2, 32, 11, 29, 3, 2, 2, 1, 2, 3, false},  // uneven kernel, pad and stride
    {1, 16, 13, 7, 4, 2, 1, 0, 3, 1, false},   // kernel_h != kernel_w, pad on one axis
    {2, 16, 14, 15, 3, 3, 1, 1, 1, 1, false},  // stride 1 (GoogLeNet's 3x3 s1 p1)
    {1, 32, 23, 23, 1, 1, 0, 0, 3, 3, false},  // stride > kernel: empty last window
    {2, 16, 12, 26, 2, 3, 0, 0, 5, 4, false},  // stride > kernel, both axes
    {2, 48, 7, 7, 0, 0, 0, 0, 1, 1, true},     // global pooling (GoogLeNet's 7x7)
    {1, 16, 5, 11, 0, 0, 0, 0, 1, 1, true},    // global, odd shape
    {3, 16, 1, 1, 1, 1, 0, 0, 1, 1, false},    // 1x1 maps
    {1, 32, 1, 1, 0, 0, 0, 0, 1, 1, true},     // global pooling of 1x1 maps
    {2, 16, 1, 40, 1, 3, 0, 1, 1, 2, false},   // one row
    {2, 16, 40, 1, 3, 1, 1, 0, 2, 1, false},   // one column
    {2, 24, 9, 11, 3, 3, 1, 1, 2, 2, false},   // three blocks of 8 (skipped at 16)
    // round_mode FLOOR: no partial last window.
    {3, 32, 32, 32, 3, 3, 0, 0, 2, 2, false, true},  // 15 windows where CEIL has 16
    {1, 16, 28, 28, 3, 3, 1, 1, 2, 2, false, true},  // ResNet's stem pool, smaller
    {2, 16, 13, 8, 2, 3, 1, 0, 3, 2, false, true},   // uneven kernel, pad and stride
};

// One block width and one instruction set's copy of the kernels.
struct KernelVariant {
  int block;
  CpuIsa isa;
};

std::string variant_name(const ::testing::TestParamInfo<KernelVariant>& info) {
  return std::string(cpu_isa_name(info.param.isa)) + "_by" + std::to_string(info.param.block);
}

class PoolingBlockedKernels : public ::testing::TestWithParam<KernelVariant> {
 protected:
  void SetUp() override {
    if (GetParam().isa > cpu_isa()) {
      GTEST_SKIP() << "this CPU (or XTRAIN_MAX_CPU_ISA) stops at " << cpu_isa_name(cpu_isa());
    }
    block_.emplace(GetParam().block);
    cap_.emplace(GetParam().isa);
  }

  // Whether the case's channels fill whole blocks at this width.
  static bool fits(const BlockedPoolCase& c) { return c.channels % channel_block() == 0; }

 private:
  std::optional<testing::ScopedChannelBlock> block_;
  std::optional<testing::ScopedCpuIsaCap> cap_;
};

INSTANTIATE_TEST_SUITE_P(
    EveryWidthAndIsa, PoolingBlockedKernels,
    ::testing::Values(KernelVariant{8, CpuIsa::kBaseline}, KernelVariant{16, CpuIsa::kBaseline},
                      KernelVariant{8, CpuIsa::kAvx2}, KernelVariant{16, CpuIsa::kAvx2},
                      KernelVariant{8, CpuIsa::kAvx512}, KernelVariant{16, CpuIsa::kAvx512}),
    variant_name);

// The copy that runs is the capped level's (x86-64 GCC builds have all three).
TEST_P(PoolingBlockedKernels, RunsTheCopyForTheCappedIsa) {
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
  EXPECT_EQ(pooling_blocked_kernels_isa(), GetParam().isa);
#else
  EXPECT_EQ(pooling_blocked_kernels_isa(), CpuIsa::kBaseline);
#endif
  EXPECT_EQ(channel_block(), GetParam().block);
}

TEST_P(PoolingBlockedKernels, MaxMatchesReference) {
  std::uint32_t seed = 1;
  for (const BlockedPoolCase& c : kCases) {
    if (!fits(c)) continue;
    for (Values kind : {Values::kUniform, Values::kFewIntegers, Values::kWithInfinitiesAndNaN}) {
      SCOPED_TRACE(::testing::Message() << "values kind " << static_cast<int>(kind));
      expect_max_pool_matches(c, kind, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

TEST_P(PoolingBlockedKernels, AverageMatchesReference) {
  std::uint32_t seed = 100;
  for (const BlockedPoolCase& c : kCases) {
    if (!fits(c)) continue;
    for (Values kind : {Values::kUniform, Values::kFewIntegers}) {
      SCOPED_TRACE(::testing::Message() << "values kind " << static_cast<int>(kind));
      expect_average_pool_matches(c, kind, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

// Every result of both kernels, forward and backward, in both output
// layouts, flattened into one vector (masks as floats).
std::vector<float> all_results(const BlockedPoolCase& c, std::uint32_t seed) {
  const std::vector<float> input = random_values(input_count(c), Values::kFewIntegers, seed);
  const std::vector<float> top_diff = random_values(output_count(c), Values::kUniform, seed + 1);
  std::vector<float> all;
  for (bool output_blocked : {true, false}) {
    const BlockedResults max = run_blocked(Pool::kMax, c, input, top_diff, output_blocked);
    const BlockedResults average = run_blocked(Pool::kAverage, c, input, top_diff, output_blocked);
    all.insert(all.end(), max.output.begin(), max.output.end());
    for (int index : max.mask) all.push_back(static_cast<float>(index));
    all.insert(all.end(), max.input_diff.begin(), max.input_diff.end());
    all.insert(all.end(), average.output.begin(), average.output.end());
    all.insert(all.end(), average.input_diff.begin(), average.input_diff.end());
  }
  return all;
}

TEST_P(PoolingBlockedKernels, SameBitsForOneAndTwoThreads) {
  // Big enough to split across threads; an odd block count for the second.
  const BlockedPoolCase cases[] = {{4, 32, 32, 32, 3, 3, 0, 0, 2, 2, false},
                                   {3, 48, 17, 19, 3, 3, 1, 1, 2, 2, false}};
  std::uint32_t seed = 500;
  for (const BlockedPoolCase& c : cases) {
    testing::expect_same_for_thread_counts([&] { return all_results(c, seed); });
    ++seed;
  }
}

}  // namespace
}  // namespace xtrain

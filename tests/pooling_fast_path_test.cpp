// The fast pooling kernels against the reference ones (pooling_kernels.hpp):
// forward, the argmax (as the mask top and as the internal int mask), and
// backward, bit for bit, on shapes that reach every path: strides 1, 2 and
// others, odd sizes, pad 1 and 2, ceil-mode windows hanging past the image,
// empty windows, global pooling, one plane, fewer planes than threads, and
// inputs with ties, -inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <vector>

#include "blocked_layout_test_support.hpp"
#include "core/cpu_isa.hpp"
#include "layers/pooling_kernels.hpp"
#include "pooling_test_support.hpp"
#include "xtrain/cpu_threads.hpp"

namespace xtrain {
namespace {

struct PoolCase {
  int planes, height, width;
  int kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w;
  bool global;
  bool floor = false;  // round_mode FLOOR (PyTorch's rounding) instead of CEIL
};

std::ostream& operator<<(std::ostream& out, const PoolCase& c) {
  return out << c.planes << "x" << c.height << "x" << c.width << " kernel " << c.kernel_h << "x"
             << c.kernel_w << " pad " << c.pad_h << "x" << c.pad_w << " stride " << c.stride_h
             << "x" << c.stride_w << (c.global ? " global" : "") << (c.floor ? " floor" : "");
}

PoolingGeometry geometry_of(const PoolCase& c) {
  return testing::pooling_geometry(c.planes, c.height, c.width, c.kernel_h, c.kernel_w, c.pad_h,
                                   c.pad_w, c.stride_h, c.stride_w, c.global, !c.floor);
}

using Values = testing::PoolValues;

std::vector<float> random_values(std::size_t count, Values kind, std::uint32_t seed) {
  return testing::random_pool_values(count, kind, seed, /*run_divisor=*/4);
}

void expect_same(const std::vector<float>& fast, const std::vector<float>& reference,
                 const char* what, const PoolCase& c) {
  std::ostringstream context;
  context << what << " (" << c << ")";
  testing::expect_same_bits_or_nan(fast, reference, context.str());
}

void expect_max_pool_matches(const PoolCase& c, Values kind, std::uint32_t seed) {
  const PoolingGeometry g = geometry_of(c);
  ASSERT_GT(g.pooled_h, 0);
  ASSERT_GT(g.pooled_w, 0);
  const std::size_t in_count = static_cast<std::size_t>(g.planes) * g.height * g.width;
  const std::size_t out_count = static_cast<std::size_t>(g.planes) * g.pooled_h * g.pooled_w;
  const std::vector<float> input = random_values(in_count, kind, seed);
  const std::vector<float> top_diff = random_values(out_count, Values::kUniform, seed + 1);

  // With the mask as a float top.
  std::vector<float> out_ref(out_count), mask_ref(out_count), out_fast(out_count),
      mask_fast(out_count);
  max_pool_forward_reference(g, input.data(), out_ref.data(), mask_ref.data(), nullptr);
  max_pool_forward(g, input.data(), out_fast.data(), mask_fast.data(), nullptr);
  expect_same(out_fast, out_ref, "MAX output", c);
  expect_same(mask_fast, mask_ref, "MAX mask top", c);

  // With the internal int mask.
  std::vector<int> index_ref(out_count), index_fast(out_count, 12345);
  std::vector<float> out_fast_int(out_count);
  max_pool_forward_reference(g, input.data(), out_ref.data(), nullptr, index_ref.data());
  max_pool_forward(g, input.data(), out_fast_int.data(), nullptr, index_fast.data());
  expect_same(out_fast_int, out_ref, "MAX output (int mask)", c);
  ASSERT_EQ(index_fast, index_ref) << c;

  std::vector<float> diff_ref(in_count), diff_fast(in_count, 7.0f);
  max_pool_backward_reference(g, top_diff.data(), mask_ref.data(), nullptr, diff_ref.data());
  max_pool_backward(g, top_diff.data(), mask_fast.data(), nullptr, diff_fast.data());
  expect_same(diff_fast, diff_ref, "MAX input diff (mask top)", c);
  std::fill(diff_fast.begin(), diff_fast.end(), 7.0f);
  max_pool_backward(g, top_diff.data(), nullptr, index_fast.data(), diff_fast.data());
  expect_same(diff_fast, diff_ref, "MAX input diff (int mask)", c);
}

void expect_average_pool_matches(const PoolCase& c, Values kind, std::uint32_t seed) {
  const PoolingGeometry g = geometry_of(c);
  const std::size_t in_count = static_cast<std::size_t>(g.planes) * g.height * g.width;
  const std::size_t out_count = static_cast<std::size_t>(g.planes) * g.pooled_h * g.pooled_w;
  const std::vector<float> input = random_values(in_count, kind, seed);
  const std::vector<float> top_diff = random_values(out_count, Values::kUniform, seed + 1);

  std::vector<float> out_ref(out_count), out_fast(out_count, 7.0f);
  average_pool_forward_reference(g, input.data(), out_ref.data());
  average_pool_forward(g, input.data(), out_fast.data());
  expect_same(out_fast, out_ref, "AVE output", c);

  std::vector<float> diff_ref(in_count), diff_fast(in_count, 7.0f);
  average_pool_backward_reference(g, top_diff.data(), diff_ref.data());
  average_pool_backward(g, top_diff.data(), diff_fast.data());
  expect_same(diff_fast, diff_ref, "AVE input diff", c);
}

// planes, height, width, kernel h/w, pad h/w, stride h/w, global.
const PoolCase kCases[] = {
    {100, 32, 32, 3, 3, 0, 0, 2, 2, false},  // CIFAR-10 pool1: ceil mode hangs over
    {64, 24, 24, 2, 2, 0, 0, 2, 2, false},   // LeNet pool1
    {7, 13, 17, 3, 3, 1, 1, 2, 2, false},    // odd sizes, pad 1
    {5, 19, 23, 5, 5, 2, 2, 2, 2, false},    // pad 2
    {3, 11, 29, 3, 2, 2, 1, 2, 3, false},    // uneven kernel, pad, stride 3
    {6, 14, 15, 3, 3, 1, 1, 1, 1, false},    // stride 1 (GoogLeNet's 3x3 s1 p1)
    {4, 16, 33, 4, 4, 0, 0, 1, 1, false},    // stride 1, larger kernel
    {2, 23, 23, 1, 1, 0, 0, 3, 3, false},    // stride > kernel: empty last window
    {3, 12, 26, 2, 3, 0, 0, 5, 4, false},    // stride > kernel, both axes
    {1, 9, 20, 3, 3, 1, 1, 2, 2, false},     // batch 1, one plane
    {3, 10, 18, 2, 2, 1, 1, 2, 2, false},    // fewer planes than threads, pad 1
    {40, 7, 7, 0, 0, 0, 0, 1, 1, true},      // global pooling (GoogLeNet's 7x7)
    {3, 5, 11, 0, 0, 0, 0, 1, 1, true},      // global, odd shape
    {4, 8, 6, 3, 3, 1, 1, 2, 2, false},      // pooled width below the sweep's minimum
    {2, 1, 40, 1, 3, 0, 1, 1, 2, false},     // one row
    {2, 40, 1, 3, 1, 1, 0, 2, 1, false},     // one column
    {3, 9, 75, 3, 3, 1, 1, 2, 2, false},     // rows of 16-lane chunks, stride 2
    {2, 7, 100, 2, 3, 0, 0, 1, 3, false},    // rows of 16-lane chunks, stride 3
    // round_mode FLOOR: no partial last window.
    {8, 32, 32, 3, 3, 0, 0, 2, 2, false, true},  // 15 windows where CEIL has 16
    {4, 28, 28, 3, 3, 1, 1, 2, 2, false, true},  // ResNet's stem pool, smaller
    {3, 13, 40, 2, 3, 1, 0, 3, 2, false, true},  // uneven kernel, pad and stride
};

// MAX forward has a copy per instruction set and chunk width: each one this
// CPU runs.
TEST(PoolingFastPath, MaxMatchesReference) {
  for (CpuIsa level : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (level > detected_cpu_isa()) continue;
    SCOPED_TRACE(cpu_isa_name(level));
    testing::ScopedCpuIsaCap cap(level);
    std::uint32_t seed = 1;
    for (const PoolCase& c : kCases) {
      for (Values kind : {Values::kUniform, Values::kFewIntegers, Values::kWithInfinitiesAndNaN}) {
        expect_max_pool_matches(c, kind, seed++);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(PoolingFastPath, AverageMatchesReference) {
  std::uint32_t seed = 100;
  for (const PoolCase& c : kCases) {
    for (Values kind : {Values::kUniform, Values::kFewIntegers}) {
      expect_average_pool_matches(c, kind, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

// More threads than planes, and a thread count the planes do not divide:
// every output must still come from one thread, the same bits.
TEST(PoolingFastPath, MatchesReferenceWithMoreThreadsThanPlanes) {
  set_cpu_threads(5);
  const PoolCase cases[] = {{1, 64, 64, 3, 3, 1, 1, 2, 2, false},
                            {3, 64, 64, 3, 3, 0, 0, 2, 2, false},
                            {7, 33, 65, 2, 2, 0, 0, 2, 2, false},
                            {3, 9, 9, 0, 0, 0, 0, 1, 1, true}};
  std::uint32_t seed = 500;
  for (const PoolCase& c : cases) {
    expect_max_pool_matches(c, Values::kFewIntegers, seed++);
    expect_average_pool_matches(c, Values::kUniform, seed++);
    if (HasFatalFailure()) break;
  }
  set_cpu_threads(0);
}

// The tie rule on a hand-made window: Caffe keeps the first maximum in
// row-major order, not the last.
TEST(PoolingFastPath, TiesGoToTheFirstMaximumInRowMajorOrder) {
  PoolingGeometry g;
  g.planes = 1;
  g.height = 2;
  g.width = 16;
  g.kernel_h = g.kernel_w = 2;
  g.stride_h = g.stride_w = 2;
  g.pooled_h = 1;
  g.pooled_w = 8;
  std::vector<float> input(32, 1.0f);  // every window all ties
  input[16 + 3] = 2.0f;                // window 1: its bottom-right wins alone
  std::vector<float> output(8), mask(8);
  max_pool_forward(g, input.data(), output.data(), mask.data(), nullptr);
  const std::vector<float> expected = {0, 19, 4, 6, 8, 10, 12, 14};
  EXPECT_EQ(mask, expected);
  EXPECT_EQ(output[1], 2.0f);
}

}  // namespace
}  // namespace xtrain

// The GPU's grid-wide reductions (src/cuda/grid_reduction.cuh), emulated on
// the host through the very functions the kernels call
// (core/reduction_tiling.hpp, core/reduction_terms.hpp): the tiles cover
// every value once, a thread's cursor steps like division and modulo, the
// two stages reproduce the plain sums and add up in the order the plan
// specifies (so the bits are fixed by the shape), and the layers' GPU sums
// (BatchNorm, Scale, PReLU, Accuracy per class) match their CPU paths.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/reduction_terms.hpp"
#include "core/reduction_tiling.hpp"
#include "grid_reduction_emulation.hpp"
#include "layer_test_support.hpp"
#include "layers/batch_norm_math.hpp"
#include "layers/loss_ops.hpp"
#include "layers/reduction_ops.hpp"
#include "xtrain/blob.hpp"

namespace xtrain {
namespace {

using reduction::ChannelTiling;
using reduction::kThreads;
using reduction::Tile;

struct Shape {
  std::size_t outer, channels, inner;
};

std::string describe(const Shape& s) {
  return "(" + std::to_string(s.outer) + ", " + std::to_string(s.channels) + ", " +
         std::to_string(s.inner) + ")";
}

// Odd shapes: empty on each axis, single values, sizes around the block and
// the minimum tile, primes, many channels with one value each, one channel
// big enough for the 1024-tile cap.
const std::vector<Shape> kShapes = {
    {0, 3, 5},    {3, 0, 5},      {3, 5, 0},       {1, 1, 1},      {1, 1, 255},    {1, 1, 256},
    {1, 1, 257},  {1, 1, 2047},   {1, 1, 2049},    {7, 1, 1},      {1, 7, 1},      {5000, 3, 1},
    {3, 2, 1000}, {2, 64, 9},     {17, 5, 331},    {2, 1500, 3},   {300, 1, 1},    {1, 3, 70001},
    {13, 64, 49}, {4, 1, 262145}, {1, 1, 2100001}, {700, 2, 3000}, {2, 1030, 700},
};

// The element offset of value k of channel c, by division and modulo.
std::size_t offset_of(const Shape& s, std::size_t channel, std::size_t k) {
  return (k / s.inner * s.channels + channel) * s.inner + k % s.inner;
}

using testing::emulate;

template <typename Reduction>
std::vector<typename Reduction::Partial> emulate_sums(const Shape& s, const Reduction& r) {
  return emulate(ChannelTiling::plan(s.outer, s.channels, s.inner),
                 reduction::SingleSweep<Reduction>{r});
}

// Values over a wide range of magnitudes and both signs: every order of
// addition gives its own last bits.
std::vector<float> wide_values(std::size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> exponent(-12.0f, 12.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> values(n);
  for (float& v : values) v = (negative(random) ? -1.0f : 1.0f) * std::exp(exponent(random));
  return values;
}

std::vector<float> uniform_values(std::size_t n, unsigned seed, float low = -1, float high = 1) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = value(random);
  return values;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

// ---- The plan

TEST(GridReductionPlan, TilesCoverEveryValueOnceInItsChannel) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const ChannelTiling tiling = ChannelTiling::plan(s.outer, s.channels, s.inner);
    const std::size_t m = s.outer * s.inner;
    EXPECT_GE(tiling.tiles_per_channel, 1u);
    EXPECT_LE(tiling.tiles_per_channel, reduction::kTargetBlocks);
    EXPECT_EQ(tiling.tile_values % kThreads, 0u);
    EXPECT_EQ(tiling.block_count(), s.channels * tiling.tiles_per_channel);
    std::vector<unsigned char> visits(s.outer * s.channels * s.inner, 0);
    struct Mark {
      const Shape& shape;
      std::vector<unsigned char>& visits;
      std::size_t wrong_channel = 0;
      void operator()(std::size_t channel, std::size_t offset) {
        ASSERT_LT(offset, visits.size());
        ++visits[offset];
        if (offset / shape.inner % shape.channels != channel) ++wrong_channel;
      }
    } mark{s, visits};
    for (std::size_t block = 0; block < tiling.block_count(); ++block) {
      const Tile tile = tiling.tile(block);
      EXPECT_EQ(tile.channel, block / tiling.tiles_per_channel);
      // Only an empty channel has an empty tile; no tile runs past the channel.
      EXPECT_TRUE(tile.begin < tile.end || (m == 0 && tile.begin == 0 && tile.end == 0));
      EXPECT_LE(tile.end, m);
      EXPECT_LE(tile.end - tile.begin, tiling.tile_values);
      for (unsigned t = 0; t < kThreads; ++t) reduction::visit_thread_values(tiling, tile, t, mark);
    }
    EXPECT_EQ(mark.wrong_channel, 0u);
    std::size_t not_once = 0;
    for (unsigned char v : visits) not_once += v != 1;
    EXPECT_EQ(not_once, 0u);
  }
}

// A thread takes its values in increasing k, kThreads apart.
TEST(GridReductionPlan, ThreadsTakeTheirValuesInOrder) {
  const Shape s{5, 3, 1000};
  const ChannelTiling tiling = ChannelTiling::plan(s.outer, s.channels, s.inner);
  ASSERT_GT(tiling.tiles_per_channel, 1u);
  struct Record {
    std::vector<std::size_t> offsets;
    void operator()(std::size_t, std::size_t offset) { offsets.push_back(offset); }
  };
  for (std::size_t block : {std::size_t{0}, tiling.block_count() / 2, tiling.block_count() - 1}) {
    const Tile tile = tiling.tile(block);
    for (unsigned t : {0u, 1u, 77u, kThreads - 1}) {
      Record record;
      reduction::visit_thread_values(tiling, tile, t, record);
      std::vector<std::size_t> expected;
      for (std::size_t k = tile.begin + t; k < tile.end; k += kThreads) {
        expected.push_back(offset_of(s, tile.channel, k));
      }
      EXPECT_EQ(record.offsets, expected) << "block " << block << " thread " << t;
    }
  }
}

TEST(GridReductionPlan, FewChannelsGetManyBlocksSmallArraysOne) {
  // BatchNorm of ResNet's first stage: 64 channels give an H100's 132 SMs
  // several blocks each (they gave 64 blocks in all).
  EXPECT_GE(ChannelTiling::plan(32, 64, 56 * 56).block_count(), 4 * 132u);
  const std::size_t one_big_channel = ChannelTiling::plan(1, 1, 10000000).block_count();
  EXPECT_GE(one_big_channel, 900u);  // tiles rounded up to whole 256-value steps
  EXPECT_LE(one_big_channel, reduction::kTargetBlocks);
  // A classifier's batch of labels, a small array: one block, no second stage.
  EXPECT_EQ(ChannelTiling::plan(1, 1, 256).block_count(), 1u);
  EXPECT_FALSE(ChannelTiling::plan(1, 1, 2048).needs_combine());
  EXPECT_TRUE(ChannelTiling::plan(1, 1, 2049).needs_combine());
  // Many channels: one tile each.
  EXPECT_EQ(ChannelTiling::plan(64, 4096, 1).tiles_per_channel, 1u);
}

TEST(GridReductionPlan, CursorStepsLikeDivisionAndModulo) {
  const std::vector<Shape> shapes = {{3000, 2, 1}, {900, 3, 2},    {50, 4, 3},
                                     {10, 5, 255}, {10, 5, 256},   {10, 5, 257},
                                     {4, 2, 1000}, {3, 1, 100000}, {2000, 7, 13}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    const ChannelTiling tiling = ChannelTiling::plan(s.outer, s.channels, s.inner);
    for (std::size_t channel : {std::size_t{0}, s.channels - 1}) {
      for (std::size_t start : {std::size_t{0}, std::size_t{1}, s.inner - 1, s.inner + 5}) {
        std::size_t wrong = 0;
        reduction::Cursor at = tiling.cursor(channel, start);
        for (std::size_t k = start; k < s.outer * s.inner; k += kThreads) {
          wrong += at.offset != offset_of(s, channel, k) || at.column != k % s.inner;
          tiling.advance(at);
        }
        EXPECT_EQ(wrong, 0u) << "channel " << channel << " start " << start;
      }
    }
  }
}

// reduce_rows (Reduction, MVN on a GPU): its grid stays within a launch's
// limit for any number of rows (the count of 2^32 rows once wrapped to 0
// blocks), and its blocks' row loops, walked as the kernel walks them, sum
// every row once.
TEST(GridReductionPlan, RowReductionsCoverAnyNumberOfRowsOnce) {
  EXPECT_EQ(ops::row_blocks(0), 0u);
  EXPECT_EQ(ops::row_blocks(7), 7u);
  EXPECT_EQ(ops::row_blocks(std::size_t{1} << 32), ops::kMaxRowBlocks);
  EXPECT_EQ(ops::row_blocks((std::size_t{1} << 31) + 5), ops::kMaxRowBlocks);
  const std::size_t rows = 3 * ops::kMaxRowBlocks + 17;
  const std::size_t grid = ops::row_blocks(rows);
  std::vector<int> visits(rows, 0);
  for (std::size_t block = 0; block < grid; ++block) {
    for (std::size_t row = block; row < rows; row += grid) ++visits[row];
  }
  EXPECT_EQ(std::count(visits.begin(), visits.end(), 1), static_cast<std::ptrdiff_t>(rows));
}

// Beyond 2^31 (and 2^32) values: sizes in size_t, the grid within its limit.
TEST(GridReductionPlan, ArraysBeyondTwoToTheThirtyOne) {
  const std::vector<Shape> shapes = {
      {1, 1, 3000000000ull}, {3, 5, (1ull << 31) + 11}, {(1ull << 20) + 3, 2, 4099}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    const ChannelTiling tiling = ChannelTiling::plan(s.outer, s.channels, s.inner);
    const std::size_t m = s.outer * s.inner;
    EXPECT_LE(tiling.block_count(), 2 * reduction::kTargetBlocks);
    EXPECT_GE(tiling.tiles_per_channel * tiling.tile_values, m);
    EXPECT_LT((tiling.tiles_per_channel - 1) * tiling.tile_values, m);
    const Tile last = tiling.tile(tiling.block_count() - 1);
    EXPECT_EQ(last.channel, s.channels - 1);
    EXPECT_EQ(last.end, m);
    for (std::size_t k : {m - 1, m / 2 + 7, (std::size_t{1} << 32) + 5}) {
      if (k >= m) continue;
      reduction::Cursor at = tiling.cursor(s.channels - 1, k);
      EXPECT_EQ(at.offset, offset_of(s, s.channels - 1, k));
      for (int step = 0; step < 1000 && k + kThreads < m; ++step) {
        tiling.advance(at);
        k += kThreads;
      }
      EXPECT_EQ(at.offset, offset_of(s, s.channels - 1, k));
    }
  }
}

// ---- The sums

TEST(GridReduction, TwoStagesReproduceThePlainSums) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    const std::size_t count = s.outer * s.channels * s.inner;
    const std::vector<float> a = uniform_values(count, 11);
    const std::vector<float> b = uniform_values(count, 12);
    const auto sums = emulate_sums(s, reduction::SumOf{a.data()});
    const auto sums_and_dots = emulate_sums(s, reduction::SumAndDotOf{a.data(), b.data()});
    const auto sums_only = emulate_sums(s, reduction::SumAndDotOf{a.data(), nullptr});
    const auto slopes = emulate_sums(s, reduction::PReluSlopeSumOf{a.data(), b.data()});
    ASSERT_EQ(sums.size(), s.channels);
    for (std::size_t c = 0; c < s.channels; ++c) {
      double sum = 0, dot = 0, slope = 0, magnitude = 0;
      for (std::size_t k = 0; k < s.outer * s.inner; ++k) {
        const std::size_t at = offset_of(s, c, k);
        sum += a[at];
        dot += static_cast<double>(a[at]) * b[at];
        slope += ops::PReluSlopeGradient{}(a[at], b[at]);
        magnitude += 1;
      }
      const double tolerance = 1e-12 * (magnitude + 1);
      EXPECT_NEAR(sums[c], sum, tolerance) << "channel " << c;
      EXPECT_NEAR(sums_and_dots[c].sum, sum, tolerance);
      EXPECT_NEAR(sums_and_dots[c].dot, dot, tolerance);
      EXPECT_NEAR(sums_only[c].sum, sum, tolerance);
      EXPECT_EQ(sums_only[c].dot, 0.0);
      EXPECT_NEAR(slopes[c], slope, tolerance);
    }
  }
}

// The order of additions, written out with plain loops and division: tile t
// of a channel, thread t's values in increasing k, the pairwise tree, then
// (several tiles) thread t's tiles in order and the tree again. The emulated
// kernels must give these bits exactly: the result depends on the shape
// alone, not on the GPU or the run.
double specified_order_sum(const Shape& s, const ChannelTiling& tiling, const float* values,
                           std::size_t channel) {
  const auto tree = [](std::vector<double>& v) {
    for (std::size_t half = v.size() / 2; half > 0; half /= 2) {
      for (std::size_t t = 0; t < half; ++t) v[t] += v[t + half];
    }
    return v[0];
  };
  const std::size_t m = s.outer * s.inner;
  std::vector<double> tile_sums;
  for (std::size_t tile = 0; tile < tiling.tiles_per_channel; ++tile) {
    const std::size_t begin = tile * tiling.tile_values;
    const std::size_t end = std::min(m, begin + tiling.tile_values);
    std::vector<double> threads(kThreads, 0.0);
    for (std::size_t t = 0; t < kThreads; ++t) {
      for (std::size_t k = begin + t; k < end; k += kThreads) {
        threads[t] += values[offset_of(s, channel, k)];
      }
    }
    tile_sums.push_back(tree(threads));
  }
  if (tile_sums.size() == 1) return tile_sums[0];
  std::vector<double> threads(kThreads, 0.0);
  for (std::size_t t = 0; t < kThreads; ++t) {
    for (std::size_t tile = t; tile < tile_sums.size(); tile += kThreads) {
      threads[t] += tile_sums[tile];
    }
  }
  return tree(threads);
}

TEST(GridReduction, AddsUpInTheOrderThePlanSpecifies) {
  const std::vector<Shape> shapes = {{1, 1, 2100001}, {4, 1, 262145}, {13, 64, 49},
                                     {3, 2, 1000},    {17, 5, 331},   {1, 1, 2049}};
  bool order_matters = false;  // the test has teeth: another order gives other bits
  for (const Shape& s : shapes) {
    SCOPED_TRACE(describe(s));
    const ChannelTiling tiling = ChannelTiling::plan(s.outer, s.channels, s.inner);
    const std::vector<float> values = wide_values(s.outer * s.channels * s.inner, 5);
    const auto sums = emulate_sums(s, reduction::SumOf{values.data()});
    for (std::size_t c = 0; c < s.channels; ++c) {
      const double expected = specified_order_sum(s, tiling, values.data(), c);
      EXPECT_TRUE(same_bits(sums[c], expected))
          << "channel " << c << ": " << sums[c] << " vs " << expected;
      double in_memory_order = 0;
      for (std::size_t k = 0; k < s.outer * s.inner; ++k) {
        in_memory_order += values[offset_of(s, c, k)];
      }
      order_matters = order_matters || !same_bits(in_memory_order, expected);
    }
  }
  EXPECT_TRUE(order_matters);
}

// ---- BatchNorm's moments

TEST(GridReduction, MomentsMatchTwoPassStatistics) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    // An offset far larger than the spread: the naive E[x^2] - E[x]^2 would
    // lose every digit.
    const std::vector<float> x =
        uniform_values(s.outer * s.channels * s.inner, 21, 999.9f, 1000.1f);
    const auto moments = emulate(ChannelTiling::plan(s.outer, s.channels, s.inner),
                                 reduction::MomentsOfTile{x.data()});
    const std::size_t m = s.outer * s.inner;
    for (std::size_t c = 0; c < s.channels; ++c) {
      if (m == 0) {  // as on the CPU: 0 / 0
        EXPECT_TRUE(std::isnan(moments[c].mean()));
        EXPECT_TRUE(std::isnan(moments[c].variance()));
        continue;
      }
      double sum = 0;
      for (std::size_t k = 0; k < m; ++k) sum += x[offset_of(s, c, k)];
      const double mean = sum / m;
      double squares = 0;
      for (std::size_t k = 0; k < m; ++k) {
        const double d = x[offset_of(s, c, k)] - mean;
        squares += d * d;
      }
      EXPECT_EQ(moments[c].count, static_cast<double>(m));
      EXPECT_NEAR(moments[c].mean(), mean, 1e-12 * mean);
      EXPECT_NEAR(moments[c].variance(), squares / m, 1e-9 * (squares / m) + 1e-300);
    }
  }
}

TEST(GridReduction, CombinedMomentsAreThoseOfTheUnion) {
  using reduction::Moments;
  // {1, 2} and {4}: union mean 7/3, squares (16 + 1 + 25) / 9 = 42/9.
  const Moments a{2, 3, 0.5};
  const Moments b{1, 4, 0};
  const Moments both = reduction::combine_moments(a, b);
  EXPECT_DOUBLE_EQ(both.count, 3);
  EXPECT_DOUBLE_EQ(both.sum, 7);
  EXPECT_DOUBLE_EQ(both.squares, 42.0 / 9.0);
  const Moments empty{0, 0, 0};
  EXPECT_DOUBLE_EQ(reduction::combine_moments(empty, a).squares, 0.5);
  EXPECT_DOUBLE_EQ(reduction::combine_moments(a, empty).squares, 0.5);
}

// ---- Loss positions

// Position p: ignored when p % 7 == 3, invalid at the given positions,
// otherwise counted with value v[p].
struct SyntheticTerm {
  const float* values;
  const std::vector<std::size_t>* invalid;
  reduction::PositionLoss operator()(std::size_t p) const {
    reduction::PositionLoss loss;
    for (std::size_t bad : *invalid) loss.invalid = loss.invalid || bad == p;
    if (loss.invalid || p % 7 == 3) return loss;
    loss.value = values[p];
    loss.counted = true;
    return loss;
  }
};

TEST(GridReduction, PositionTotalsCountSumAndFindTheFirstInvalid) {
  struct Case {
    std::size_t n;
    std::vector<std::size_t> invalid;
  };
  const std::vector<Case> cases = {
      {1, {}},
      {3, {}},
      {256, {}},
      {2049, {2048}},
      {300000, {}},
      {300000, {299999}},
      {300000, {250000, 3000, 170001}},
      {500000, {0}},
      {4, {3, 1}},
      {300000, {5256, 5000}},  // one thread's two
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("n = " + std::to_string(c.n));
    const std::vector<float> values = uniform_values(c.n, 31, 0, 5);
    const SyntheticTerm term{values.data(), &c.invalid};
    const auto totals = emulate_sums(Shape{1, 1, c.n}, reduction::PositionSum<SyntheticTerm>{term});
    ASSERT_EQ(totals.size(), 1u);
    double sum = 0;
    unsigned long long counted = 0;
    long long first_invalid = -1;
    for (std::size_t p = 0; p < c.n; ++p) {
      const reduction::PositionLoss loss = term(p);
      if (loss.invalid && first_invalid < 0) first_invalid = static_cast<long long>(p);
      if (loss.invalid || !loss.counted) continue;
      sum += loss.value;
      ++counted;
    }
    EXPECT_NEAR(totals[0].sum, sum, 1e-12 * (sum + 1));
    EXPECT_EQ(totals[0].counted, counted);
    EXPECT_EQ(totals[0].first_invalid, first_invalid);
  }
}

// ---- The layers: the GPU's sums (emulated) against the CPU paths

TEST(GridReduction, BatchNormStatisticsAndGradientMatchTheCpuLayer) {
  for (const std::vector<int>& dims : {std::vector<int>{6, 3, 37, 41}, std::vector<int>{2, 5, 1, 1},
                                       std::vector<int>{64, 4}, std::vector<int>{1, 2, 100, 100}}) {
    Blob bottom(dims), top;
    testing::fill_uniform(bottom, 41, 2.0f, 3.0f);
    auto layer = testing::make_layer("name: 'bn' type: 'BatchNorm'");
    layer->setup({&bottom}, {&top});
    layer->forward({&bottom}, {&top});
    const std::vector<float> normalised(top.cpu_data(), top.cpu_data() + top.count());
    Blob output_diff(dims);
    testing::fill_uniform(output_diff, 42);
    std::copy_n(output_diff.cpu_data(), top.count(), top.mutable_cpu_diff());
    layer->backward({&top}, {true}, {&bottom});

    const std::size_t num = dims[0], channels = dims[1];
    const std::size_t spatial = bottom.count() / (num * channels);
    const auto moments = emulate(ChannelTiling::plan(num, channels, spatial),
                                 reduction::MomentsOfTile{bottom.cpu_data()});
    const float correction = batch_norm::RunningSums::correction_for(num * spatial);
    for (std::size_t c = 0; c < channels; ++c) {  // the first batch's sums: mean, corrected var
      const float mean = static_cast<float>(moments[c].mean());
      const float variance = static_cast<float>(moments[c].variance());
      EXPECT_NEAR(layer->blobs()[0]->cpu_data()[c], mean, 1e-6f * mean);
      EXPECT_NEAR(layer->blobs()[1]->cpu_data()[c], correction * variance, 1e-5f * variance);
    }
    // The GPU's backward: the gradient means, then batch_gradient per value.
    const auto gradient_sums = emulate_sums(
        Shape{num, channels, spatial}, reduction::SumAndDotOf{top.cpu_diff(), normalised.data()});
    const double m = static_cast<double>(num * spatial);
    float worst = 0;
    for (std::size_t i = 0; i < bottom.count(); ++i) {
      const std::size_t c = i / spatial % channels;
      const float deviation =
          batch_norm::deviation(static_cast<float>(moments[c].variance()), 1e-5f);
      const float dx = batch_norm::batch_gradient(
          top.cpu_diff()[i], normalised[i], static_cast<float>(gradient_sums[c].sum / m),
          static_cast<float>(gradient_sums[c].dot / m), deviation);
      worst = std::max(worst, std::abs(dx - bottom.cpu_diff()[i]));
    }
    EXPECT_LT(worst, 1e-4f);
  }
}

TEST(GridReduction, ScaleAndPReluParameterGradientsMatchTheCpuLayers) {
  const std::vector<int> dims = {5, 4, 33, 29};
  const Shape s{5, 4, 33 * 29};
  Blob bottom(dims), top;
  testing::fill_uniform(bottom, 51);
  {
    auto scale = testing::make_layer("name: 's' type: 'Scale' scale_param { bias_term: true }");
    scale->setup({&bottom}, {&top});
    scale->forward({&bottom}, {&top});
    testing::fill_uniform(top, 52);
    std::copy_n(top.cpu_data(), top.count(), top.mutable_cpu_diff());
    scale->backward({&top}, {true}, {&bottom});
    const auto sums = emulate_sums(s, reduction::SumAndDotOf{top.cpu_diff(), bottom.cpu_data()});
    for (std::size_t c = 0; c < s.channels; ++c) {
      EXPECT_NEAR(scale->blobs()[0]->cpu_diff()[c], static_cast<float>(sums[c].dot), 1e-4f);
      EXPECT_NEAR(scale->blobs()[1]->cpu_diff()[c], static_cast<float>(sums[c].sum), 1e-4f);
    }
  }
  for (const bool shared : {false, true}) {
    auto prelu = testing::make_layer(std::string("name: 'p' type: 'PReLU' prelu_param { ") +
                                     (shared ? "channel_shared: true }" : "}"));
    Blob x(dims), y;
    testing::fill_uniform(x, 53);
    prelu->setup({&x}, {&y});
    prelu->forward({&x}, {&y});
    testing::fill_uniform(y, 54);
    std::copy_n(y.cpu_data(), y.count(), y.mutable_cpu_diff());
    prelu->backward({&y}, {true}, {&x});
    // Slope s's values are a run of channels_per_slope * inner per sample.
    const Shape runs = shared ? Shape{s.outer, 1, s.channels * s.inner} : s;
    const auto slopes = emulate_sums(runs, reduction::PReluSlopeSumOf{x.cpu_data(), y.cpu_diff()});
    for (std::size_t c = 0; c < runs.channels; ++c) {
      // The CPU adds the terms one by one in float.
      EXPECT_NEAR(prelu->blobs()[0]->cpu_diff()[c], static_cast<float>(slopes[c]), 5e-3f)
          << (shared ? "shared" : "per channel") << " slope " << c;
    }
  }
}

// The per-class counts of count_class_hits_kernel (src/layers/loss_kernels.cu)
// over the positions' tiles, with integer counts, and its hits / seen.
TEST(GridReduction, PerClassAccuracyMatchesTheCpuLayer) {
  constexpr int outer = 37, classes = 11, inner = 150;
  Blob scores(std::vector<int>{outer, classes, inner}), labels(std::vector<int>{outer, inner});
  testing::fill_uniform(scores, 61);
  std::mt19937 random(62);
  std::uniform_int_distribution<int> label(0, classes);  // `classes` is the ignore label
  for (std::size_t i = 0; i < labels.count(); ++i) labels.mutable_cpu_data()[i] = label(random);
  Blob accuracy, per_class;
  auto layer = testing::make_layer(
      "name: 'a' type: 'Accuracy' accuracy_param { top_k: 3 ignore_label: 11 }");
  layer->setup({&scores, &labels}, {&accuracy, &per_class});
  layer->forward({&scores, &labels}, {&accuracy, &per_class});

  const ops::LabelRule rule{true, classes, classes};
  struct Count {
    const float* scores;
    const float* labels;
    ops::LabelRule rule;
    std::vector<unsigned long long> seen, hits;
    void operator()(std::size_t, std::size_t p) {
      const int label = rule(labels[p]);
      if (label < 0) return;
      const float* column = scores + (p / inner) * classes * inner + p % inner;
      ++seen[label];
      if (ops::in_top_k(column, inner, classes, label, 3)) ++hits[label];
    }
  } count{scores.cpu_data(), labels.cpu_data(), rule, std::vector<unsigned long long>(classes),
          std::vector<unsigned long long>(classes)};
  const ChannelTiling tiling = ChannelTiling::plan(1, 1, labels.count());
  ASSERT_TRUE(tiling.needs_combine());  // several blocks count
  for (std::size_t block = 0; block < tiling.block_count(); ++block) {
    for (unsigned t = 0; t < kThreads; ++t) {
      reduction::visit_thread_values(tiling, tiling.tile(block), t, count);
    }
  }
  for (int c = 0; c < classes; ++c) {
    const float expected =
        count.seen[c] == 0 ? 0.0f
                           : static_cast<float>(count.hits[c]) / static_cast<float>(count.seen[c]);
    EXPECT_EQ(per_class.cpu_data()[c], expected) << "class " << c;
  }
}

}  // namespace
}  // namespace xtrain

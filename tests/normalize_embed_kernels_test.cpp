// The GPU kernels of Normalize (grid-wide reductions for its long sums) and
// of Embed, BatchReindex and Filter backward (segmented row sums), emulated
// on the host through the very functions the kernels call
// (layers/normalize_ops.hpp, layers/row_segments.hpp, and the reductions'
// block and thread loops of grid_reduction_emulation.hpp): the index logic
// must cover every value once and land each sum in its place, which these
// tests check against plain references by division and modulo and against
// the CPU layers. docs/cuda.md ("Kernels that were serial") lists the bugs
// planted to show that they catch a wrong index.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "grid_reduction_emulation.hpp"
#include "layer_test_support.hpp"
#include "layers/normalize_ops.hpp"
#include "layers/row_segments.hpp"
#include "xtrain/blob.hpp"

namespace xtrain {
namespace {

using testing::emulate_per_channel;

std::vector<float> uniform_values(std::size_t n, unsigned seed, float low = -1, float high = 1) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> values(n);
  for (float& v : values) v = value(random);
  return values;
}

// ---- Normalize

struct NormalizeCase {
  std::vector<int> shape;  // (N, C, H, W) or (N, C)
  bool across_spatial;
  bool channel_shared;
};

std::string describe(const NormalizeCase& c) {
  std::string text = "(";
  for (int d : c.shape) text += std::to_string(d) + " ";
  return text + ") across_spatial " + std::to_string(c.across_spatial) + " channel_shared " +
         std::to_string(c.channel_shared);
}

// Small shapes, odd sizes, items of several tiles (7 x 40 x 41 = 11,480
// values: six tiles of 2,048), an empty batch, a 2-d bottom.
const std::vector<NormalizeCase> kNormalizeCases = {
    {{2, 5, 3, 4}, true, true},     {{2, 5, 3, 4}, true, false},   {{2, 5, 3, 4}, false, false},
    {{2, 5, 3, 4}, false, true},    {{3, 7, 40, 41}, true, false}, {{3, 7, 40, 41}, false, true},
    {{1, 300, 9, 9}, true, true},   {{4, 3}, true, false},         {{0, 5, 3, 4}, true, false},
    {{5, 2, 1, 700}, false, false},
};

ops::NormalizeGeometry geometry_of(const NormalizeCase& c) {
  ops::NormalizeGeometry g;
  g.num = static_cast<std::size_t>(c.shape[0]);
  g.channels = static_cast<std::size_t>(c.shape[1]);
  g.spatial = c.shape.size() > 2 ? static_cast<std::size_t>(c.shape[2] * c.shape[3]) : 1;
  g.across_spatial = c.across_spatial;
  g.channel_shared = c.channel_shared;
  return g;
}

// What the GPU computes (detection_kernels.cu), with the kernels as loops.
struct NormalizeOnTheGpu {
  std::vector<float> norms, y, dots, dx, scale_diff;
};

NormalizeOnTheGpu emulate_normalize(const ops::NormalizeGeometry& g, float eps,
                                    const std::vector<float>& x, const std::vector<float>& dy,
                                    const std::vector<float>& scale,
                                    std::vector<float> scale_diff) {
  NormalizeOnTheGpu out;
  const std::size_t n = x.size();
  out.norms.assign(g.groups(), -1.0f);
  out.dots.assign(g.groups(), -1.0f);
  if (g.across_spatial) {
    emulate_per_channel(ops::normalize_group_tiling(g),
                        reduction::SingleSweep<ops::NormalizeSquaresOf>{{x.data()}},
                        ops::StoreNorm{out.norms.data(), eps});
    emulate_per_channel(
        ops::normalize_group_tiling(g),
        reduction::SingleSweep<ops::NormalizeScaledDotsOf>{{g, x.data(), dy.data(), scale.data()}},
        ops::StoreSum{out.dots.data()});
  } else {
    for (std::size_t group = 0; group < g.groups(); ++group) {  // normalize_norms_kernel
      out.norms[group] = ops::normalize_group_norm(g, x.data(), group, eps);
      out.dots[group] = ops::normalize_group_dot(g, x.data(), dy.data(), scale.data(), group);
    }
  }
  out.y.resize(n);
  out.dx.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    out.y[i] = ops::normalize_forward(g, x.data(), scale.data(), out.norms.data(), i);
    out.dx[i] = ops::normalize_backward(g, x.data(), dy.data(), scale.data(), out.norms.data(),
                                        out.dots.data(), i);
  }
  if (n > 0) {
    emulate_per_channel(ops::normalize_scale_tiling(g),
                        reduction::SingleSweep<ops::NormalizeScaleGradientOf>{
                            {g, x.data(), dy.data(), out.norms.data()}},
                        ops::AddSum{scale_diff.data()});
  }
  out.scale_diff = std::move(scale_diff);
  return out;
}

void expect_close(const std::vector<float>& actual, const std::vector<double>& expected,
                  double relative, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], relative * std::max(1.0, std::fabs(expected[i])))
        << what << " element " << i;
  }
}

// The sums against plain references in double, each element placed by
// division and modulo (not by the tiling): a value missed, counted twice or
// put in another group or channel shows here.
TEST(NormalizeKernels, GridSumsMatchPlainReferences) {
  const float eps = 1e-10f;
  for (const NormalizeCase& c : kNormalizeCases) {
    SCOPED_TRACE(describe(c));
    const ops::NormalizeGeometry g = geometry_of(c);
    const std::size_t n = g.num * g.channels * g.spatial;
    const std::vector<float> x = uniform_values(n, 3);
    const std::vector<float> dy = uniform_values(n, 4);
    const std::vector<float> scale =
        uniform_values(g.channel_shared ? 1 : g.channels, 5, 0.5f, 2.0f);
    const std::vector<float> start = uniform_values(scale.size(), 6);
    const NormalizeOnTheGpu gpu = emulate_normalize(g, eps, x, dy, scale, start);

    std::vector<double> squares(g.groups(), eps), dots(g.groups(), 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t item = i / (g.channels * g.spatial);
      const std::size_t channel = i / g.spatial % g.channels;
      const std::size_t group = g.across_spatial ? item : item * g.spatial + i % g.spatial;
      squares[group] += static_cast<double>(x[i]) * x[i];
      dots[group] += static_cast<double>(dy[i]) * scale[g.channel_shared ? 0 : channel] * x[i];
    }
    std::vector<double> norms(g.groups());
    for (std::size_t k = 0; k < g.groups(); ++k) norms[k] = std::sqrt(squares[k]);
    std::vector<double> scale_diff(start.begin(), start.end());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t channel = i / g.spatial % g.channels;
      scale_diff[g.channel_shared ? 0 : channel] +=
          static_cast<double>(dy[i]) * x[i] / gpu.norms[g.group_of(i)];
    }
    expect_close(gpu.norms, norms, 1e-6, "norms");
    expect_close(gpu.dots, dots, 1e-5, "dots");
    expect_close(gpu.scale_diff, scale_diff, 1e-5, "scale gradient");
  }
}

// The emulated GPU path against the CPU layer: the tops, the bottom
// gradient and the accumulated scale gradient, within float sums' rounding.
TEST(NormalizeKernels, EmulatedGpuPathMatchesTheCpuLayer) {
  for (const NormalizeCase& c : kNormalizeCases) {
    SCOPED_TRACE(describe(c));
    const ops::NormalizeGeometry g = geometry_of(c);
    auto layer = testing::make_layer("name: 'n' type: 'Normalize' norm_param { across_spatial: " +
                                     std::string(c.across_spatial ? "true" : "false") +
                                     " channel_shared: " + (c.channel_shared ? "true" : "false") +
                                     " scale_filler { type: 'uniform' min: 0.5 max: 2 } }");
    Blob bottom(c.shape);
    Blob top;
    testing::fill_uniform(bottom, 7);
    layer->setup({&bottom}, {&top});
    Blob& scale = *layer->blobs()[0];
    testing::fill_uniform(scale, 8);  // a gradient to add to
    std::copy_n(scale.cpu_data(), scale.count(), scale.mutable_cpu_diff());
    const std::vector<float> start = testing::diff_of(scale);
    layer->forward({&bottom}, {&top});
    testing::fill_uniform(top, 9);
    std::copy_n(top.cpu_data(), top.count(), top.mutable_cpu_diff());
    layer->backward({&top}, {true}, {&bottom});

    const NormalizeOnTheGpu gpu = emulate_normalize(
        g, 1e-10f, testing::data_of(bottom), testing::diff_of(top), testing::data_of(scale), start);
    const auto as_double = [](const std::vector<float>& v) {
      return std::vector<double>(v.begin(), v.end());
    };
    // The top was overwritten by its gradient's values: compare y by forward again.
    Blob top_again;
    layer->forward({&bottom}, {&top_again});
    expect_close(gpu.y, as_double(testing::data_of(top_again)), 1e-5, "top");
    expect_close(gpu.dx, as_double(testing::diff_of(bottom)), 1e-4, "bottom gradient");
    expect_close(gpu.scale_diff, as_double(testing::diff_of(scale)), 1e-4, "scale gradient");
  }
}

// ---- Segmented row sums (Embed's weight gradient, BatchReindex, Filter)

// The kernel as a loop: add_row_segments_kernel's threads in any order (each
// target element has one writer, so the order of threads does not matter);
// also returns how many threads wrote each target element.
std::vector<int> emulate_row_segments(const std::vector<std::size_t>& rows, std::size_t width,
                                      const std::vector<float>& source,
                                      std::vector<float>& target) {
  const std::vector<std::size_t> packed =
      ops::plan_row_segments(rows.size(), [&rows](std::size_t p) { return rows[p]; });
  const ops::RowSegments plan =
      ops::row_segments_view(packed.data(), packed.size(), rows.size(), width);
  std::vector<int> writers(target.size(), 0);
  for (std::size_t j = plan.threads(); j-- > 0;) {  // backwards: the order is free
    ops::add_segment_column(plan, source.data(), target.data(), j);
    ++writers[plan.rows[j / width] * width + j % width];
  }
  return writers;
}

struct RowCase {
  std::string name;
  std::vector<std::size_t> rows;  // the row each position reads
  std::size_t table_rows;
  std::size_t width;
};

std::vector<std::size_t> random_rows(std::size_t positions, std::size_t table_rows, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<std::size_t> row(0, table_rows - 1);
  std::vector<std::size_t> rows(positions);
  for (std::size_t& r : rows) r = row(random);
  return rows;
}

std::vector<RowCase> row_cases() {
  std::vector<std::size_t> increasing;  // Filter: distinct, in order
  for (std::size_t r = 1; r < 40; r += 3) increasing.push_back(r);
  return {
      {"repeats", random_rows(50, 7, 1), 7, 5},
      {"wide rows", random_rows(33, 10, 2), 10, 300},
      {"one column", random_rows(64, 3, 3), 3, 1},
      {"every position one row", std::vector<std::size_t>(40, 2), 4, 6},
      {"distinct increasing (Filter)", increasing, 40, 4},
      {"distinct decreasing", {5, 4, 3, 2, 1, 0}, 6, 3},
      {"no positions (an empty batch)", {}, 5, 4},
  };
}

// The plan against its definition: order holds every position once, sorted
// by row and increasing within a row; each segment one distinct row.
TEST(RowSegmentKernels, ThePlanGroupsEveryPositionByRowInOrder) {
  for (const RowCase& c : row_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<std::size_t> packed =
        ops::plan_row_segments(c.rows.size(), [&c](std::size_t p) { return c.rows[p]; });
    const ops::RowSegments plan =
        ops::row_segments_view(packed.data(), packed.size(), c.rows.size(), c.width);
    EXPECT_EQ(plan.segments, std::set<std::size_t>(c.rows.begin(), c.rows.end()).size());
    std::set<std::size_t> seen;
    for (std::size_t s = 0; s < plan.segments; ++s) {
      ASSERT_LT(plan.starts[s], plan.starts[s + 1]);
      if (s > 0) {
        EXPECT_LT(plan.rows[s - 1], plan.rows[s]);
      }
      for (std::size_t q = plan.starts[s]; q < plan.starts[s + 1]; ++q) {
        EXPECT_EQ(c.rows[plan.order[q]], plan.rows[s]);
        if (q > plan.starts[s]) {
          EXPECT_LT(plan.order[q - 1], plan.order[q]);
        }
        EXPECT_TRUE(seen.insert(plan.order[q]).second) << "position " << plan.order[q] << " twice";
      }
    }
    EXPECT_EQ(seen.size(), c.rows.size());
    EXPECT_EQ(plan.starts[plan.segments], c.rows.size());
  }
}

// Every target element of a row that positions read has exactly one writer,
// and the sums are the CPU loop's bit for bit (the same additions in the
// same order, from the target's starting value).
TEST(RowSegmentKernels, SumsAreTheCpuLoopsBitForBit) {
  for (const RowCase& c : row_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<float> source = uniform_values(c.rows.size() * c.width, 11, -3, 3);
    const std::vector<float> start = uniform_values(c.table_rows * c.width, 12);
    std::vector<float> cpu = start;
    const ops::Add add;
    for (std::size_t p = 0; p < c.rows.size(); ++p) {  // Embed's backward_cpu
      for (std::size_t j = 0; j < c.width; ++j) {
        float& target = cpu[c.rows[p] * c.width + j];
        target = add(target, source[p * c.width + j]);
      }
    }
    std::vector<float> gpu = start;
    const std::vector<int> writers = emulate_row_segments(c.rows, c.width, source, gpu);
    EXPECT_EQ(gpu, cpu);
    const std::set<std::size_t> read(c.rows.begin(), c.rows.end());
    for (std::size_t i = 0; i < writers.size(); ++i) {
      EXPECT_EQ(writers[i], read.count(i / c.width) ? 1 : 0) << "element " << i;
    }
  }
}

// The same against the layers themselves: Embed's weight gradient and
// BatchReindex's bottom gradient on the CPU.
TEST(RowSegmentKernels, MatchEmbedAndBatchReindexOnTheCpu) {
  const std::vector<std::size_t> rows = random_rows(24, 6, 21);
  const std::size_t width = 5;
  Blob indices({static_cast<int>(rows.size())});
  for (std::size_t p = 0; p < rows.size(); ++p) {
    indices.mutable_cpu_data()[p] = static_cast<float>(rows[p]);
  }

  auto embed = testing::make_layer(
      "name: 'e' type: 'Embed' embed_param { num_output: 5 input_dim: 6 bias_term: false "
      "weight_filler { type: 'gaussian' std: 1 } }");
  Blob embedded;
  embed->setup({&indices}, {&embedded});
  Blob& weights = *embed->blobs()[0];
  testing::fill_uniform(weights, 22);
  std::copy_n(weights.cpu_data(), weights.count(), weights.mutable_cpu_diff());
  std::vector<float> gpu = testing::diff_of(weights);
  embed->forward({&indices}, {&embedded});
  testing::fill_uniform(embedded, 23, -2, 2);
  std::copy_n(embedded.cpu_data(), embedded.count(), embedded.mutable_cpu_diff());
  embed->backward({&embedded}, {false}, {&indices});
  emulate_row_segments(rows, width, testing::diff_of(embedded), gpu);
  EXPECT_EQ(gpu, testing::diff_of(weights));

  auto reindex = testing::make_layer("name: 'r' type: 'BatchReindex'");
  Blob items({6, 5});
  Blob picked;
  testing::fill_uniform(items, 24);
  reindex->setup({&items, &indices}, {&picked});
  reindex->forward({&items, &indices}, {&picked});
  testing::fill_uniform(picked, 25, -2, 2);
  std::copy_n(picked.cpu_data(), picked.count(), picked.mutable_cpu_diff());
  reindex->backward({&picked}, {true, false}, {&items, &indices});
  std::vector<float> reindexed(items.count(), 0.0f);  // backward_gpu zeroes dx first
  emulate_row_segments(rows, width, testing::diff_of(picked), reindexed);
  EXPECT_EQ(reindexed, testing::diff_of(items));
}

}  // namespace
}  // namespace xtrain

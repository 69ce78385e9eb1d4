// Scale's and Bias's parallel CPU paths against the plain (o, d, i) loops they
// replaced: learned scale with and without bias_term, the scale as a second
// bottom, Bias learned and from a bottom, in place and not, on odd shapes;
// and the same bits with one thread and two.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fast_path_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct Axes {
  std::size_t outer, dim, inner;
};

// The reference loops, for an (outer, dim, inner) view.
std::vector<float> reference_forward(const Axes& a, const std::vector<float>& x,
                                     const std::vector<float>& scale,
                                     const std::vector<float>& bias) {
  std::vector<float> y(x.size());
  for (std::size_t o = 0; o < a.outer; ++o) {
    for (std::size_t d = 0; d < a.dim; ++d) {
      for (std::size_t i = 0; i < a.inner; ++i) {
        const std::size_t j = (o * a.dim + d) * a.inner + i;
        y[j] = x[j] * (scale.empty() ? 1.0f : scale[d]) + (bias.empty() ? 0.0f : bias[d]);
      }
    }
  }
  return y;
}

// Adds sum over o, i of dy (and of dy * x when x is given) to `sums`, in double
// per (o, d) as the former code did.
void reference_channel_sums(const Axes& a, const std::vector<float>& dy,
                            const std::vector<float>* x, std::vector<float>* sums) {
  for (std::size_t o = 0; o < a.outer; ++o) {
    for (std::size_t d = 0; d < a.dim; ++d) {
      double total = 0;
      for (std::size_t i = 0; i < a.inner; ++i) {
        const std::size_t j = (o * a.dim + d) * a.inner + i;
        total += x ? static_cast<double>(dy[j]) * (*x)[j] : dy[j];
      }
      (*sums)[d] += static_cast<float>(total);
    }
  }
}

struct Case {
  std::vector<int> shape;
  std::string param;  // scale_param / bias_param contents
  Axes axes;
  bool in_place;
};

// A case's input (U(-1, 1) from seed 1, also kept as x), its top (the input
// itself when in place) and a blob of one value per channel (a scale or bias
// as bottom[1]) from `channel_seed`.
struct CaseBlobs {
  CaseBlobs(const Case& c, std::uint64_t channel_seed)
      : input(c.shape),
        per_channel(std::vector<int>{static_cast<int>(c.axes.dim)}),
        output(c.in_place ? &input : &separate_output) {
    fill_uniform(input, 1);
    fill_uniform(per_channel, channel_seed);
    x = data_of(input);
  }

  Blob input;
  Blob per_channel;
  Blob separate_output;
  Blob* output;
  std::vector<float> x;
};

// A top diff for the case: U(-1, 1) from seed 2.
std::vector<float> top_diff_of(const Case& c) {
  Blob diff(c.shape);
  fill_uniform(diff, 2);
  return data_of(diff);
}

class ScaleFastPathTest : public ::testing::TestWithParam<Case> {};

// Learned scale (with bias_term when the param says so): top, the learned
// gradients (accumulated onto what was there) and the bottom diff.
TEST_P(ScaleFastPathTest, LearnedScaleMatchesTheReference) {
  const Case& c = GetParam();
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { filler { type: 'uniform' } " +
                          c.param + " bias_filler { type: 'uniform' } }");
  layer->seed(4);
  CaseBlobs blobs(c, 0);  // its per-channel blob is not used: the scale is learned
  Blob& input = blobs.input;
  Blob* output = blobs.output;
  const std::vector<float>& x = blobs.x;
  layer->setup({&input}, {output});
  const bool bias_term = layer->blobs().size() == 2;
  const std::vector<float> scale = data_of(*layer->blobs()[0]);
  const std::vector<float> bias = bias_term ? data_of(*layer->blobs()[1]) : std::vector<float>{};
  layer->forward({&input}, {output});
  expect_close(data_of(*output), reference_forward(c.axes, x, scale, bias), 1e-6f, "top");

  const std::vector<float> dy = top_diff_of(c);
  std::copy(dy.begin(), dy.end(), output->mutable_cpu_diff());
  for (std::size_t b = 0; b < layer->blobs().size(); ++b) fill_uniform(*layer->blobs()[b], 3 + b);
  std::vector<float> scale_diff(c.axes.dim), bias_diff(c.axes.dim);
  for (auto& blob : layer->blobs())
    std::copy(blob->cpu_data(), blob->cpu_data() + blob->count(), blob->mutable_cpu_diff());
  scale_diff = diff_of(*layer->blobs()[0]);
  if (bias_term) bias_diff = diff_of(*layer->blobs()[1]);
  const std::vector<float> new_scale = data_of(*layer->blobs()[0]);
  layer->backward({output}, {true}, {&input});
  reference_channel_sums(c.axes, dy, &x, &scale_diff);
  expect_close(diff_of(*layer->blobs()[0]), scale_diff, 1e-5f, "scale diff");
  if (bias_term) {
    reference_channel_sums(c.axes, dy, nullptr, &bias_diff);
    expect_close(diff_of(*layer->blobs()[1]), bias_diff, 1e-5f, "bias diff");
  }
  expect_close(diff_of(input), reference_forward(c.axes, dy, new_scale, {}), 1e-6f, "bottom diff");
}

// The scale as bottom[1] (with a learned bias when bias_term): its diff is
// overwritten, the bottom diff is dy * scale. Also with propagate_down only
// to bottom[0], and only to bottom[1].
TEST_P(ScaleFastPathTest, ScaleFromBottomMatchesTheReference) {
  const Case& c = GetParam();
  auto layer = make_layer("name: 's' type: 'Scale' scale_param { " + c.param +
                          " bias_filler { type: 'uniform' } }");
  CaseBlobs blobs(c, 8);
  Blob& input = blobs.input;
  Blob& scale_blob = blobs.per_channel;
  Blob* output = blobs.output;
  const std::vector<float>& x = blobs.x;
  const std::vector<float> scale = data_of(scale_blob);
  // An (outer, dim, inner) view needs the scale's shape to be the input's
  // axes; a flat scale lines up when it spans one axis, which these cases do.
  layer->setup({&input, &scale_blob}, {output});
  const bool bias_term = !layer->blobs().empty();
  const std::vector<float> bias = bias_term ? data_of(*layer->blobs()[0]) : std::vector<float>{};
  layer->forward({&input, &scale_blob}, {output});
  expect_close(data_of(*output), reference_forward(c.axes, x, scale, bias), 1e-6f, "top");
  const std::vector<float> dy = top_diff_of(c);
  for (const std::vector<bool>& down :
       {std::vector<bool>{true, true}, std::vector<bool>{true, false},
        std::vector<bool>{false, true}}) {
    std::copy(dy.begin(), dy.end(), output->mutable_cpu_diff());
    fill_uniform(input, 1);  // restores x when in place (forward saved it anyway)
    std::copy(x.begin(), x.end(), input.mutable_cpu_data());
    fill_uniform(scale_blob, 9);  // the diff must not keep these
    std::copy(scale_blob.cpu_data(), scale_blob.cpu_data() + scale_blob.count(),
              scale_blob.mutable_cpu_diff());
    std::copy(scale.begin(), scale.end(), scale_blob.mutable_cpu_data());
    std::vector<float> bias_diff(c.axes.dim, 0.0f);
    if (bias_term) {
      layer->blobs()[0]->scale_diff(0);
    }
    const std::vector<float> old_input_diff = diff_of(input);
    layer->backward({output}, down, {&input, &scale_blob});
    if (down[1]) {
      std::vector<float> scale_diff(c.axes.dim, 0.0f);
      reference_channel_sums(c.axes, dy, &x, &scale_diff);
      expect_close(diff_of(scale_blob), scale_diff, 1e-5f, "scale diff");
    }
    if (bias_term) {
      reference_channel_sums(c.axes, dy, nullptr, &bias_diff);
      expect_close(diff_of(*layer->blobs()[0]), bias_diff, 1e-5f, "bias diff");
    }
    if (down[0]) {
      expect_close(diff_of(input), reference_forward(c.axes, dy, scale, {}), 1e-6f, "bottom diff");
    } else if (!c.in_place) {
      expect_close(diff_of(input), old_input_diff, 0, "untouched bottom diff");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ScaleFastPathTest,
    ::testing::Values(Case{{2, 3, 4, 5}, "bias_term: true", {2, 3, 20}, false},
                      Case{{2, 3, 4, 5}, "bias_term: false", {2, 3, 20}, true},
                      Case{{1, 7, 13, 11}, "bias_term: true", {1, 7, 143}, true},
                      Case{{16, 65, 1, 1}, "bias_term: true", {16, 65, 1}, false},
                      Case{{17, 33}, "bias_term: true", {17, 33, 1}, true},
                      Case{{4, 9, 37, 29}, "bias_term: true", {4, 9, 1073}, true},
                      Case{{4, 9, 37, 29}, "bias_term: false", {4, 9, 1073}, false},
                      Case{{3, 5, 41, 7}, "axis: 2 bias_term: true", {15, 41, 7}, false},
                      Case{{300, 130}, "axis: 1 bias_term: true", {300, 130, 1}, false},
                      Case{{5, 3, 2, 7}, "axis: 0 bias_term: true", {1, 5, 42}, true}));

class BiasFastPathTest : public ::testing::TestWithParam<Case> {};

TEST_P(BiasFastPathTest, LearnedAndBottomBiasMatchTheReference) {
  const Case& c = GetParam();
  for (const bool from_bottom : {false, true}) {
    auto layer = make_layer("name: 'b' type: 'Bias' bias_param { filler { type: 'uniform' } " +
                            c.param + " }");
    CaseBlobs blobs(c, 5);
    Blob& input = blobs.input;
    Blob& bias_blob = blobs.per_channel;
    Blob* output = blobs.output;
    const std::vector<float>& x = blobs.x;
    BlobVec bottom = {&input};
    if (from_bottom) bottom.push_back(&bias_blob);
    layer->setup(bottom, {output});
    Blob& bias = from_bottom ? bias_blob : *layer->blobs()[0];
    layer->forward(bottom, {output});
    expect_close(data_of(*output), reference_forward(c.axes, x, {}, data_of(bias)), 1e-6f, "top");
    const std::vector<float> dy = top_diff_of(c);
    std::copy(dy.begin(), dy.end(), output->mutable_cpu_diff());
    fill_uniform(bias, 6);
    std::copy(bias.cpu_data(), bias.cpu_data() + bias.count(), bias.mutable_cpu_diff());
    std::vector<float> bias_diff =
        from_bottom ? std::vector<float>(c.axes.dim, 0.0f) : data_of(bias);
    layer->backward({output}, std::vector<bool>(bottom.size(), true), bottom);
    reference_channel_sums(c.axes, dy, nullptr, &bias_diff);
    expect_close(diff_of(bias), bias_diff, 1e-5f, "bias diff");
    expect_close(diff_of(input), dy, 0, "bottom diff");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BiasFastPathTest,
                         ::testing::Values(Case{{2, 3, 4, 5}, "", {2, 3, 20}, false},
                                           Case{{1, 7, 13, 11}, "", {1, 7, 143}, true},
                                           Case{{16, 65, 1, 1}, "", {16, 65, 1}, false},
                                           Case{{4, 9, 37, 29}, "", {4, 9, 1073}, false},
                                           Case{{300, 130}, "", {300, 130, 1}, true},
                                           Case{{3, 5, 41, 7}, "axis: 2", {15, 41, 7}, false}));

TEST(ScaleBiasFastPath, SameBitsForOneAndTwoThreads) {
  testing::expect_same_for_thread_counts([] {
    auto layer = make_layer(
        "name: 's' type: 'Scale' scale_param { bias_term: true filler { type: 'uniform' } }");
    layer->seed(2);
    Blob input(std::vector<int>{4, 9, 37, 29});
    fill_uniform(input, 1);
    layer->setup({&input}, {&input});
    layer->forward({&input}, {&input});
    std::vector<float> results = data_of(input);
    fill_uniform(input, 2);
    std::copy(input.cpu_data(), input.cpu_data() + input.count(), input.mutable_cpu_diff());
    for (auto& blob : layer->blobs()) blob->scale_diff(0);
    layer->backward({&input}, {true}, {&input});
    for (const Blob* blob : {layer->blobs()[0].get(), layer->blobs()[1].get(), &input}) {
      const auto diff = diff_of(*blob);
      results.insert(results.end(), diff.begin(), diff.end());
    }
    return results;
  });
}

}  // namespace
}  // namespace xtrain

// Eltwise's, Split's and Concat's block-parallel CPU paths against the plain
// sweeps they replaced: Eltwise SUM with coefficients, PROD (stable and not)
// and MAX with its winner mask over 2 and 3 bottoms; Split's sum of 1 to 3
// top diffs; Concat along an inner axis and along axis 0; sizes that are not
// a multiple of the block; and the same bits with one thread and two.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fast_path_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

using Values = std::vector<std::vector<float>>;

struct EltwiseResult {
  std::vector<float> top;
  Values bottom_diffs;
};

// The reference: Caffe 1.0's sweeps, one bottom at a time over all values.
EltwiseResult reference_eltwise(const std::string& op, const std::vector<float>& coeff, bool stable,
                                const Values& x, const std::vector<float>& dy) {
  const std::size_t n = dy.size();
  EltwiseResult r;
  r.top.assign(n, 0.0f);
  std::vector<int> winner(n, 0);
  if (op == "SUM") {
    for (std::size_t k = 0; k < x.size(); ++k) {
      for (std::size_t j = 0; j < n; ++j) r.top[j] += coeff[k] * x[k][j];
    }
  } else if (op == "PROD") {
    for (std::size_t j = 0; j < n; ++j) r.top[j] = x[0][j] * x[1][j];
    for (std::size_t k = 2; k < x.size(); ++k) {
      for (std::size_t j = 0; j < n; ++j) r.top[j] *= x[k][j];
    }
  } else {
    for (std::size_t j = 0; j < n; ++j) {
      winner[j] = x[0][j] > x[1][j] ? 0 : 1;
      r.top[j] = x[winner[j]][j];
    }
    for (std::size_t k = 2; k < x.size(); ++k) {
      for (std::size_t j = 0; j < n; ++j) {
        if (x[k][j] > r.top[j]) {
          r.top[j] = x[k][j];
          winner[j] = static_cast<int>(k);
        }
      }
    }
  }
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::vector<float> d(n);
    for (std::size_t j = 0; j < n; ++j) {
      if (op == "SUM") {
        d[j] = coeff[k] * dy[j];
      } else if (op == "MAX") {
        d[j] = winner[j] == static_cast<int>(k) ? dy[j] : 0.0f;
      } else if (stable) {
        float product = 1.0f;
        bool started = false;
        for (std::size_t i = 0; i < x.size(); ++i) {
          if (i == k) continue;
          product = started ? product * x[i][j] : x[i][j];
          started = true;
        }
        d[j] = product * dy[j];
      } else {
        d[j] = r.top[j] / x[k][j] * dy[j];
      }
    }
    r.bottom_diffs.push_back(d);
  }
  return r;
}

struct EltwiseCase {
  std::string param;
  std::string op;
  std::vector<float> coeff;
  bool stable;
  int bottoms;
  std::vector<int> shape;
};

class EltwiseFastPathTest : public ::testing::TestWithParam<EltwiseCase> {};

TEST_P(EltwiseFastPathTest, MatchesTheReference) {
  const EltwiseCase& c = GetParam();
  auto layer = make_layer("name: 'e' type: 'Eltwise' eltwise_param { " + c.param + " }");
  std::vector<Blob> inputs(c.bottoms);
  BlobVec bottom;
  Values x;
  for (int k = 0; k < c.bottoms; ++k) {
    inputs[k].reshape(c.shape);
    fill_uniform(inputs[k], 10 + k, -2.0f, 2.0f);
    // Ties between bottoms 0 and 1 exercise MAX's rule.
    if (k == 1) {
      for (std::size_t j = 0; j < inputs[k].count(); j += 7) {
        inputs[k].mutable_cpu_data()[j] = inputs[0].cpu_data()[j];
      }
    }
    bottom.push_back(&inputs[k]);
    x.push_back(data_of(inputs[k]));
  }
  Blob output;
  layer->setup(bottom, {&output});
  layer->forward(bottom, {&output});
  Blob weights(c.shape);
  fill_uniform(weights, 3);
  const std::vector<float> dy = data_of(weights);
  const EltwiseResult expected = reference_eltwise(c.op, c.coeff, c.stable, x, dy);
  expect_close(data_of(output), expected.top, 1e-6f, "top");
  std::copy(dy.begin(), dy.end(), output.mutable_cpu_diff());
  std::vector<bool> down(c.bottoms, true);
  down[0] = false;  // a bottom without a gradient keeps its diff
  for (Blob& input : inputs) input.scale_diff(0);
  layer->backward({&output}, down, bottom);
  expect_close(diff_of(inputs[0]), std::vector<float>(dy.size(), 0.0f), 0, "untouched diff");
  for (int k = 1; k < c.bottoms; ++k) {
    expect_close(diff_of(inputs[k]), expected.bottom_diffs[k], 1e-5f, "bottom diff");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Operations, EltwiseFastPathTest,
    ::testing::Values(
        EltwiseCase{"", "SUM", {1, 1}, true, 2, {2, 3, 4, 5}},
        EltwiseCase{"", "SUM", {1, 1, 1}, true, 3, {3, 7, 61, 67}},
        EltwiseCase{"coeff: 0.5 coeff: -2 coeff: 3", "SUM", {0.5f, -2, 3}, true, 3, {5, 16411}},
        EltwiseCase{"operation: PROD", "PROD", {}, true, 2, {1, 3, 61, 67}},
        EltwiseCase{"operation: PROD", "PROD", {}, true, 3, {5, 16411}},
        EltwiseCase{"operation: PROD stable_prod_grad: false", "PROD", {}, false, 3, {5, 16411}},
        EltwiseCase{"operation: MAX", "MAX", {}, true, 2, {3, 7, 61, 67}},
        EltwiseCase{"operation: MAX", "MAX", {}, true, 3, {5, 16411}},
        EltwiseCase{"operation: MAX", "MAX", {}, true, 3, {1, 1, 3, 3}}));

TEST(SplitFastPath, SumsTheTopDiffsLikeTheReference) {
  for (const std::vector<int>& shape : {std::vector<int>{2, 3}, std::vector<int>{3, 7, 61, 67}}) {
    for (int tops = 1; tops <= 4; ++tops) {
      auto layer = make_layer("name: 's' type: 'Split'");
      Blob input(shape);
      std::vector<Blob> outputs(tops);
      BlobVec top;
      for (Blob& output : outputs) top.push_back(&output);
      layer->setup({&input}, top);
      std::vector<float> expected(input.count(), 0.0f);
      for (int t = 0; t < tops; ++t) {
        fill_uniform(outputs[t], 50 + t);
        std::copy(outputs[t].cpu_data(), outputs[t].cpu_data() + input.count(),
                  outputs[t].mutable_cpu_diff());
        // Caffe's order: (d0 + d1) + d2 + ...
        for (std::size_t j = 0; j < expected.size(); ++j) {
          expected[j] = t == 0 ? outputs[t].cpu_diff()[j] : expected[j] + outputs[t].cpu_diff()[j];
        }
      }
      layer->backward(top, {true}, {&input});
      expect_close(diff_of(input), expected, 0, "bottom diff");
    }
  }
}

// The reference: row block o of the top is the bottoms' blocks o in turn.
TEST(ConcatFastPath, ForwardAndBackwardMatchTheReference) {
  struct ConcatCase {
    int axis;
    std::vector<std::vector<int>> shapes;
  };
  for (const ConcatCase& c :
       {ConcatCase{1, {{2, 3, 5, 7}, {2, 1, 5, 7}, {2, 4, 5, 7}}},
        ConcatCase{1, {{16, 64, 28, 28}, {16, 128, 28, 28}, {16, 32, 28, 28}}},
        ConcatCase{0, {{3, 5, 41, 43}, {1, 5, 41, 43}}},
        ConcatCase{2, {{2, 3, 5, 7}, {2, 3, 4, 7}}}, ConcatCase{-1, {{3, 9}, {3, 1}}}}) {
    auto layer = make_layer(
        "name: 'c' type: 'Concat' concat_param { axis: " + std::to_string(c.axis) + " }");
    std::vector<Blob> inputs(c.shapes.size());
    BlobVec bottom;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      inputs[i].reshape(c.shapes[i]);
      fill_uniform(inputs[i], 60 + i);
      bottom.push_back(&inputs[i]);
    }
    Blob output;
    layer->setup(bottom, {&output});
    layer->forward(bottom, {&output});
    const int axis = inputs[0].canonical_axis_index(c.axis);
    const std::size_t outer = inputs[0].count(0, axis);
    std::vector<float> expected;
    for (std::size_t o = 0; o < outer; ++o) {
      for (const Blob& input : inputs) {
        const std::size_t block = input.count(axis);
        expected.insert(expected.end(), input.cpu_data() + o * block,
                        input.cpu_data() + (o + 1) * block);
      }
    }
    expect_close(data_of(output), expected, 0, "top");
    std::copy(output.cpu_data(), output.cpu_data() + output.count(), output.mutable_cpu_diff());
    std::vector<bool> down(inputs.size(), true);
    down[0] = false;
    inputs[0].scale_diff(0);
    layer->backward({&output}, down, bottom);
    expect_close(diff_of(inputs[0]), std::vector<float>(inputs[0].count(), 0.0f), 0,
                 "untouched diff");
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      expect_close(diff_of(inputs[i]), data_of(inputs[i]), 0, "bottom diff");
    }
  }
}

TEST(EltwiseSplitConcatFastPath, SameBitsForOneAndTwoThreads) {
  testing::expect_same_for_thread_counts([] {
    auto layer = make_layer("name: 'e' type: 'Eltwise' eltwise_param { coeff: 0.3 coeff: 1.7 }");
    Blob a(std::vector<int>{3, 7, 61, 67}), b(a.shape()), output;
    fill_uniform(a, 1);
    fill_uniform(b, 2);
    layer->setup({&a, &b}, {&output});
    layer->forward({&a, &b}, {&output});
    std::copy(a.cpu_data(), a.cpu_data() + a.count(), output.mutable_cpu_diff());
    layer->backward({&output}, {true, true}, {&a, &b});
    std::vector<float> results = data_of(output);
    for (const Blob* blob : {&a, &b}) {
      const auto diff = diff_of(*blob);
      results.insert(results.end(), diff.begin(), diff.end());
    }
    return results;
  });
}

}  // namespace
}  // namespace xtrain

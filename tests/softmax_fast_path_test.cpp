// Softmax's and SoftmaxWithLoss's parallel CPU paths against the plain loops
// they replaced (one sample at a time, channels outside, positions inside):
// forward and backward over axes with one and with many inner positions,
// batch 1, in place; the loss gradient with an ignored label; and the same
// bits with one thread and two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fast_path_test_support.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct View {
  std::size_t outer, channels, inner;
};

std::vector<float> reference_softmax(const View& v, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::size_t o = 0; o < v.outer; ++o) {
    for (std::size_t i = 0; i < v.inner; ++i) {
      const auto at = [&](std::size_t c) { return (o * v.channels + c) * v.inner + i; };
      float top = x[at(0)];
      for (std::size_t c = 1; c < v.channels; ++c) top = std::max(top, x[at(c)]);
      float sum = 0;
      for (std::size_t c = 0; c < v.channels; ++c) {
        y[at(c)] = std::exp(x[at(c)] - top);
        sum = c == 0 ? y[at(c)] : sum + y[at(c)];
      }
      for (std::size_t c = 0; c < v.channels; ++c) y[at(c)] /= sum;
    }
  }
  return y;
}

std::vector<float> reference_softmax_backward(const View& v, const std::vector<float>& y,
                                              const std::vector<float>& dy) {
  std::vector<float> dx(y.size());
  for (std::size_t o = 0; o < v.outer; ++o) {
    for (std::size_t i = 0; i < v.inner; ++i) {
      const auto at = [&](std::size_t c) { return (o * v.channels + c) * v.inner + i; };
      float dot = 0;
      for (std::size_t c = 0; c < v.channels; ++c) dot += dy[at(c)] * y[at(c)];
      for (std::size_t c = 0; c < v.channels; ++c) dx[at(c)] = (dy[at(c)] - dot) * y[at(c)];
    }
  }
  return dx;
}

struct Case {
  std::vector<int> shape;
  int axis;
  View view;
  bool in_place;
};

class SoftmaxFastPathTest : public ::testing::TestWithParam<Case> {};

TEST_P(SoftmaxFastPathTest, MatchesTheReference) {
  const Case& c = GetParam();
  auto layer = make_layer(
      "name: 's' type: 'Softmax' softmax_param { axis: " + std::to_string(c.axis) + " }");
  Blob input(c.shape);
  Blob separate_output;
  Blob* output = c.in_place ? &input : &separate_output;
  fill_uniform(input, 1, -5.0f, 5.0f);
  const std::vector<float> x = data_of(input);
  layer->setup({&input}, {output});
  layer->forward({&input}, {output});
  const std::vector<float> y = reference_softmax(c.view, x);
  expect_close(data_of(*output), y, 1e-6f, "top");
  Blob weights(c.shape);
  fill_uniform(weights, 2);
  const std::vector<float> dy = data_of(weights);
  std::copy(dy.begin(), dy.end(), output->mutable_cpu_diff());
  layer->backward({output}, {true}, {&input});
  expect_close(diff_of(input), reference_softmax_backward(c.view, data_of(*output), dy), 1e-6f,
               "bottom diff");
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxFastPathTest,
                         ::testing::Values(Case{{16, 1000}, 1, {16, 1000, 1}, false},
                                           Case{{1, 1000}, 1, {1, 1000, 1}, true},
                                           Case{{2, 5, 37, 41}, 1, {2, 5, 1517}, false},
                                           Case{{1, 3, 600, 7}, 1, {1, 3, 4200}, true},
                                           Case{{3, 4, 5, 6}, 2, {12, 5, 6}, false},
                                           Case{{3, 4, 5, 6}, -1, {60, 6, 1}, true},
                                           Case{{7, 1, 3}, 1, {7, 1, 3}, false}));

// The loss gradient against the former loops: p, minus 1 at the label, zero
// at an ignored position, scaled by loss weight / normaliser.
TEST(SoftmaxWithLossFastPath, GradientMatchesTheReference) {
  for (const std::vector<int>& shape :
       {std::vector<int>{16, 1000}, std::vector<int>{2, 5, 37, 41}, std::vector<int>{1, 7, 3, 2}}) {
    auto layer = make_layer(
        "name: 'loss' type: 'SoftmaxWithLoss' loss_param { ignore_label: 2 normalization: VALID }");
    Blob scores(shape);
    fill_uniform(scores, 3, -4.0f, 4.0f);
    const View view{static_cast<std::size_t>(shape[0]), static_cast<std::size_t>(shape[1]),
                    scores.count(2)};
    Blob labels(std::vector<int>{shape[0], static_cast<int>(view.inner)});
    std::size_t valid = 0;
    for (std::size_t j = 0; j < labels.count(); ++j) {
      const int label = static_cast<int>((j * 7919) % view.channels);
      labels.mutable_cpu_data()[j] = static_cast<float>(label);
      if (label != 2) ++valid;
    }
    Blob loss;
    layer->setup({&scores, &labels}, {&loss});
    layer->forward({&scores, &labels}, {&loss});
    loss.mutable_cpu_diff()[0] = 0.75f;
    layer->backward({&loss}, {true, false}, {&scores, &labels});
    std::vector<float> expected = reference_softmax(view, data_of(scores));
    for (std::size_t o = 0; o < view.outer; ++o) {
      for (std::size_t i = 0; i < view.inner; ++i) {
        const int label = static_cast<int>(labels.cpu_data()[o * view.inner + i]);
        for (std::size_t c = 0; c < view.channels; ++c) {
          float& value = expected[(o * view.channels + c) * view.inner + i];
          value = label == 2 ? 0.0f : value - (static_cast<int>(c) == label ? 1.0f : 0.0f);
        }
      }
    }
    for (float& value : expected) value *= 0.75f / static_cast<float>(valid);
    expect_close(diff_of(scores), expected, 1e-6f, "scores diff");
  }
}

TEST(SoftmaxFastPath, SameBitsForOneAndTwoThreads) {
  testing::expect_same_for_thread_counts([] {
    auto layer = make_layer("name: 's' type: 'Softmax'");
    Blob input(std::vector<int>{2, 5, 37, 41}), output;
    fill_uniform(input, 1, -5.0f, 5.0f);
    layer->setup({&input}, {&output});
    layer->forward({&input}, {&output});
    fill_uniform(input, 2);
    std::copy(input.cpu_data(), input.cpu_data() + input.count(), output.mutable_cpu_diff());
    layer->backward({&output}, {true}, {&input});
    std::vector<float> results = data_of(output);
    const auto diff = diff_of(input);
    results.insert(results.end(), diff.begin(), diff.end());
    return results;
  });
}

}  // namespace
}  // namespace xtrain

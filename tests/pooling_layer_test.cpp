// Pooling: Caffe's ceil-mode output sizes, MAX and AVE forward against a
// direct reference and hand-computed values, the argmax top, gradients, and
// bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"

namespace xtrain {
namespace {

using testing::expect_error;

struct PoolSpec {
  bool max = true;
  int kernel_h = 2;
  int kernel_w = 2;
  int pad_h = 0;
  int pad_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  bool floor = false;  // round_mode FLOOR
};

LayerParameter pool_param(const PoolSpec& s) {
  LayerParameter param;
  param.set_name("pool");
  param.set_type("Pooling");
  PoolingParameter* pool = param.mutable_pooling_param();
  pool->set_pool(s.max ? PoolingParameter::MAX : PoolingParameter::AVE);
  if (s.kernel_h == s.kernel_w) {
    pool->set_kernel_size(s.kernel_h);
  } else {
    pool->set_kernel_h(s.kernel_h);
    pool->set_kernel_w(s.kernel_w);
  }
  if (s.pad_h == s.pad_w) {
    pool->set_pad(s.pad_h);
  } else {
    pool->set_pad_h(s.pad_h);
    pool->set_pad_w(s.pad_w);
  }
  if (s.stride_h == s.stride_w) {
    pool->set_stride(s.stride_h);
  } else {
    pool->set_stride_h(s.stride_h);
    pool->set_stride_w(s.stride_w);
  }
  if (s.floor) pool->set_round_mode(PoolingParameter::FLOOR);
  return param;
}

// Distinct values (a shuffled ramp, 0.1 apart) so max pooling has no ties a
// finite-difference step could flip.
void fill_distinct(Blob& blob, std::uint64_t seed) {
  std::vector<int> order(blob.count());
  std::iota(order.begin(), order.end(), 0);
  RandomStream random(seed);
  std::shuffle(order.begin(), order.end(), random.engine());
  float* data = blob.mutable_cpu_data();
  for (std::size_t i = 0; i < order.size(); ++i) data[i] = 0.1f * order[i] - 0.05f * order.size();
}

// Caffe's output size, written out independently of the layer. The clip
// applies on both axes when either axis is padded.
int caffe_pooled_size(int input, int kernel, int pad, int stride, bool any_padding, bool floor) {
  const float steps = static_cast<float>(input + 2 * pad - kernel) / stride;
  int pooled = static_cast<int>(floor ? std::floor(steps) : std::ceil(steps)) + 1;
  if (any_padding && (pooled - 1) * stride >= input + pad) --pooled;
  return pooled;
}

// Reference pooling: every window cell is visited and tested one by one.
struct Reference {
  std::vector<float> values;
  std::vector<float> argmax;
};

Reference reference_pooling(const Blob& input, const PoolSpec& s) {
  const int planes = input.shape(0) * input.shape(1);
  const int height = input.shape(2), width = input.shape(3);
  const bool any_padding = s.pad_h > 0 || s.pad_w > 0;
  const int out_h =
      caffe_pooled_size(height, s.kernel_h, s.pad_h, s.stride_h, any_padding, s.floor);
  const int out_w = caffe_pooled_size(width, s.kernel_w, s.pad_w, s.stride_w, any_padding, s.floor);
  Reference result;
  for (int p = 0; p < planes; ++p) {
    const float* x = input.cpu_data() + p * height * width;
    for (int y = 0; y < out_h; ++y) {
      for (int xo = 0; xo < out_w; ++xo) {
        float best = -FLT_MAX;
        int best_index = -1;
        double sum = 0;
        int divisor = 0;
        for (int i = 0; i < s.kernel_h; ++i) {
          for (int j = 0; j < s.kernel_w; ++j) {
            const int row = y * s.stride_h - s.pad_h + i;
            const int col = xo * s.stride_w - s.pad_w + j;
            // AVE's divisor counts padding cells, but not cells past it.
            if (row < height + s.pad_h && col < width + s.pad_w) ++divisor;
            if (row < 0 || row >= height || col < 0 || col >= width) continue;
            const float value = x[row * width + col];
            sum += value;
            if (value > best) {
              best = value;
              best_index = row * width + col;
            }
          }
        }
        result.values.push_back(s.max ? best : static_cast<float>(sum / divisor));
        result.argmax.push_back(static_cast<float>(best_index));
      }
    }
  }
  return result;
}

class PoolingTest : public ::testing::Test {
 protected:
  std::unique_ptr<Layer> make(const LayerParameter& param, const std::vector<int>& input_shape,
                              bool with_mask = false) {
    input_.reshape(input_shape);
    fill_distinct(input_, 3);
    auto layer = testing::create_layer(param);
    layer->setup({&input_}, tops(with_mask));
    return layer;
  }
  BlobVec tops(bool with_mask) { return with_mask ? BlobVec{&output_, &mask_} : BlobVec{&output_}; }

  void check_forward(const PoolSpec& s, const std::vector<int>& input_shape, bool with_mask) {
    SCOPED_TRACE(std::string(s.max ? "MAX" : "AVE") + (s.floor ? " FLOOR" : " CEIL") + " input " +
                 shape_to_string(input_shape) + " kernel " + std::to_string(s.kernel_h) + "x" +
                 std::to_string(s.kernel_w) + " pad " + std::to_string(s.pad_h) + "x" +
                 std::to_string(s.pad_w) + " stride " + std::to_string(s.stride_h) + "x" +
                 std::to_string(s.stride_w));
    auto layer = make(pool_param(s), input_shape, with_mask);
    layer->forward({&input_}, tops(with_mask));
    const Reference expected = reference_pooling(input_, s);
    ASSERT_EQ(output_.count(), expected.values.size());
    for (std::size_t i = 0; i < expected.values.size(); ++i) {
      ASSERT_NEAR(output_.cpu_data()[i], expected.values[i], 1e-5f) << "element " << i;
      if (with_mask) {
        ASSERT_EQ(mask_.cpu_data()[i], expected.argmax[i]) << "element " << i;
      }
    }
  }

  std::vector<int> pooled_shape(const LayerParameter& param, const std::vector<int>& input) {
    make(param, input);
    return output_.shape();
  }

  Blob input_;
  Blob output_;
  Blob mask_;
};

PoolSpec square(bool max, int kernel, int stride, int pad = 0) {
  PoolSpec s;
  s.max = max;
  s.kernel_h = s.kernel_w = kernel;
  s.stride_h = s.stride_w = stride;
  s.pad_h = s.pad_w = pad;
  return s;
}

TEST_F(PoolingTest, CaffeCeilModeShapes) {
  // LeNet pool1: 24 -> 12 (kernel 2, stride 2).
  EXPECT_EQ(pooled_shape(pool_param(square(true, 2, 2)), {2, 20, 24, 24}),
            (std::vector<int>{2, 20, 12, 12}));
  // AlexNet pool1: 55 -> 27, pool5: 13 -> 6 (kernel 3, stride 2).
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 2)), {1, 4, 55, 55}),
            (std::vector<int>{1, 4, 27, 27}));
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 2)), {1, 4, 13, 13}),
            (std::vector<int>{1, 4, 6, 6}));
  // Ceil mode: 6 -> 3 where floor would give 2.
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 2)), {1, 1, 6, 6}),
            (std::vector<int>{1, 1, 3, 3}));
  // A kernel larger than the input but within one stride still gives 1.
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 2)), {1, 1, 2, 2}),
            (std::vector<int>{1, 1, 1, 1}));
  // Padding clip: ceil gives 4 windows on 5 with kernel 2, stride 2, pad 1,
  // but the 4th would start at 5 = in + pad, so it is dropped.
  EXPECT_EQ(pooled_shape(pool_param(square(true, 2, 2, 1)), {1, 1, 5, 5}),
            (std::vector<int>{1, 1, 3, 3}));
  // ...and 4 -> 3 with kernel 3, stride 2, pad 1 keeps its last window.
  EXPECT_EQ(pooled_shape(pool_param(square(false, 3, 2, 1)), {1, 1, 4, 4}),
            (std::vector<int>{1, 1, 3, 3}));
  // The clip applies to an unpadded axis too when the other axis is padded:
  // width 6, kernel 2, stride 3 gives ceil(4/3) + 1 = 3, and the 3rd window
  // would start at 6 >= 6 + 0.
  PoolSpec only_h_padded;
  only_h_padded.kernel_h = 3;
  only_h_padded.pad_h = 1;
  only_h_padded.stride_h = 2;
  only_h_padded.stride_w = 3;
  EXPECT_EQ(pooled_shape(pool_param(only_h_padded), {1, 1, 5, 6}), (std::vector<int>{1, 1, 3, 2}));
  // GoogLeNet-style 3x3 stride 1 pad 1 keeps the size.
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 1, 1)), {1, 2, 7, 7}),
            (std::vector<int>{1, 2, 7, 7}));
}

PoolSpec floor_rounded(PoolSpec s) {
  s.floor = true;
  return s;
}

TEST_F(PoolingTest, FloorRoundModeShapes) {
  // ResNet's stem: 3x3, stride 2, pad 1 on 112: floor(111 / 2) + 1 = 56
  // (CEIL: 57).
  EXPECT_EQ(pooled_shape(pool_param(floor_rounded(square(true, 3, 2, 1))), {1, 2, 112, 112}),
            (std::vector<int>{1, 2, 56, 56}));
  EXPECT_EQ(pooled_shape(pool_param(square(true, 3, 2, 1)), {1, 2, 112, 112}),
            (std::vector<int>{1, 2, 57, 57}));
  // 6 -> 2 with kernel 3, stride 2 (CEIL: 3).
  EXPECT_EQ(pooled_shape(pool_param(floor_rounded(square(true, 3, 2))), {1, 1, 6, 6}),
            (std::vector<int>{1, 1, 2, 2}));
  // Where the division is exact both agree: LeNet's 24 -> 12.
  EXPECT_EQ(pooled_shape(pool_param(floor_rounded(square(false, 2, 2))), {2, 3, 24, 24}),
            (std::vector<int>{2, 3, 12, 12}));
  // A kernel larger than the padded input leaves no window: refused.
  expect_error(
      [&] {
        make(pool_param(floor_rounded(square(true, 3, 2))), {1, 1, 2, 2});
      },
      {"does not fit the input"});
}

// Caffe master's prototxt spelling parses, and the default stays CEIL.
TEST_F(PoolingTest, RoundModeReadsAsCaffeMasterWritesIt) {
  const LayerParameter floor = testing::layer_param_from(R"(name: "pool" type: "Pooling"
      pooling_param { pool: MAX kernel_size: 3 stride: 2 round_mode: FLOOR })");
  EXPECT_EQ(floor.pooling_param().round_mode(), PoolingParameter::FLOOR);
  const LayerParameter plain = testing::layer_param_from(R"(name: "pool" type: "Pooling"
      pooling_param { pool: MAX kernel_size: 3 stride: 2 })");
  EXPECT_EQ(plain.pooling_param().round_mode(), PoolingParameter::CEIL);
  EXPECT_EQ(pooled_shape(floor, {1, 1, 7, 8}), (std::vector<int>{1, 1, 3, 3}));
  EXPECT_EQ(pooled_shape(plain, {1, 1, 7, 8}), (std::vector<int>{1, 1, 3, 4}));
}

XTRAIN_DEVICE_TEST_F(PoolingTest, FloorMaxAndAverageHandComputed) {
  // A 4x5 ramp (value = 10 * row + column), kernel 2, stride 2: FLOOR keeps
  // the 2x2 whole windows; CEIL would add a third column of windows holding
  // only column 4.
  //    0  1  2  3  4
  //   10 11 12 13 14
  //   20 21 22 23 24
  //   30 31 32 33 34
  PoolSpec s = floor_rounded(square(true, 2, 2));
  auto max = make(pool_param(s), {1, 1, 4, 5});
  for (int i = 0; i < 20; ++i) input_.mutable_cpu_data()[i] = 10.0f * (i / 5) + i % 5;
  max->forward({&input_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(std::vector<float>(output_.cpu_data(), output_.cpu_data() + 4),
            (std::vector<float>{11, 13, 31, 33}));
  s.max = false;
  auto average = make(pool_param(s), {1, 1, 4, 5});
  for (int i = 0; i < 20; ++i) input_.mutable_cpu_data()[i] = 10.0f * (i / 5) + i % 5;
  average->forward({&input_}, {&output_});
  // (0 + 1 + 10 + 11) / 4 = 5.5, (2 + 3 + 12 + 13) / 4 = 7.5, ...
  EXPECT_EQ(std::vector<float>(output_.cpu_data(), output_.cpu_data() + 4),
            (std::vector<float>{5.5f, 7.5f, 25.5f, 27.5f}));
  // Kernel 3, stride 2, pad 1: on the 5 columns floor((5 + 2 - 3) / 2) + 1
  // = 3 windows, starting at -1, 1 and 3 (the last ends at 6 = in + pad);
  // each divides by the whole 3 x 3, padding included.
  s = floor_rounded(square(false, 3, 2, 1));
  auto padded = make(pool_param(s), {1, 1, 4, 5});
  for (int i = 0; i < 20; ++i) input_.mutable_cpu_data()[i] = 10.0f * (i / 5) + i % 5;
  padded->forward({&input_}, {&output_});
  // Rows: floor((4 + 2 - 3) / 2) + 1 = 2 windows, [-1, 2) and [1, 4).
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 1, 2, 3}));
  const float expected[] = {(0 + 1 + 10 + 11) / 9.0f,
                            (1 + 2 + 3 + 11 + 12 + 13) / 9.0f,
                            (3 + 4 + 13 + 14) / 9.0f,
                            (10 + 11 + 20 + 21 + 30 + 31) / 9.0f,
                            (11 + 12 + 13 + 21 + 22 + 23 + 31 + 32 + 33) / 9.0f,
                            (13 + 14 + 23 + 24 + 33 + 34) / 9.0f};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(output_.cpu_data()[i], expected[i], 1e-5f) << i;
}

XTRAIN_DEVICE_TEST_F(PoolingTest, GradientFloor) {
  auto max = make(pool_param(floor_rounded(square(true, 3, 2, 1))), {2, 2, 6, 7});
  testing::GradientChecker().check(*max, {&input_}, {&output_});
  auto average = make(pool_param(floor_rounded(square(false, 3, 2))), {2, 2, 7, 6});
  testing::GradientChecker().check(*average, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(PoolingTest, MaxHandComputed) {
  auto layer = make(pool_param(square(true, 2, 1)), {1, 1, 3, 3}, true);
  const float values[] = {1, 5, 2,  //
                          4, 3, 9,  //
                          7, 8, 6};
  std::copy(values, values + 9, input_.mutable_cpu_data());
  layer->forward({&input_}, {&output_, &mask_});
  EXPECT_EQ(std::vector<float>(output_.cpu_data(), output_.cpu_data() + 4),
            (std::vector<float>{5, 9, 8, 9}));
  EXPECT_EQ(std::vector<float>(mask_.cpu_data(), mask_.cpu_data() + 4),
            (std::vector<float>{1, 5, 7, 5}));
}

XTRAIN_DEVICE_TEST_F(PoolingTest, AverageHandComputedWithPadding) {
  // Caffe's classic case: 3x3 of 2s, kernel 3, stride 1, pad 1. Each window
  // divides by 9 (padding counts), so corners give 8/9 and edges 12/9.
  auto layer = make(pool_param(square(false, 3, 1, 1)), {1, 1, 3, 3});
  std::fill(input_.mutable_cpu_data(), input_.mutable_cpu_data() + 9, 2.0f);
  layer->forward({&input_}, {&output_});
  const float expected[] = {8.f / 9,  12.f / 9, 8.f / 9,  12.f / 9, 2.f,
                            12.f / 9, 8.f / 9,  12.f / 9, 8.f / 9};
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(output_.cpu_data()[i], expected[i], 1e-6f) << i;
}

XTRAIN_DEVICE_TEST_F(PoolingTest, AverageDivisorStopsAtThePadding) {
  // Width 4, kernel 3, stride 2, pad 1: windows start at -1, 1, 3. The last
  // one would reach 6 but is clipped to in + pad = 5, so it divides by 2.
  PoolSpec s;
  s.max = false;
  s.kernel_h = 1;
  s.kernel_w = 3;
  s.pad_w = 1;
  s.stride_h = 1;
  s.stride_w = 2;
  auto layer = make(pool_param(s), {1, 1, 1, 4});
  const float values[] = {1, 2, 3, 4};
  std::copy(values, values + 4, input_.mutable_cpu_data());
  layer->forward({&input_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 1, 1, 3}));
  EXPECT_FLOAT_EQ(output_.cpu_data()[0], (1 + 2) / 3.0f);
  EXPECT_FLOAT_EQ(output_.cpu_data()[1], (2 + 3 + 4) / 3.0f);
  EXPECT_FLOAT_EQ(output_.cpu_data()[2], 4 / 2.0f);
}

XTRAIN_DEVICE_TEST_F(PoolingTest, ForwardMatchesReference) {
  const std::vector<std::vector<int>> inputs = {{2, 3, 6, 6}, {1, 2, 7, 5}, {1, 1, 5, 8}};
  std::vector<PoolSpec> specs = {square(true, 3, 2), square(true, 2, 2, 1), square(true, 3, 1, 2),
                                 square(true, 3, 3, 1)};
  PoolSpec rectangular;
  rectangular.kernel_h = 3;
  rectangular.kernel_w = 2;
  rectangular.pad_h = 1;
  rectangular.pad_w = 0;
  rectangular.stride_h = 2;
  rectangular.stride_w = 3;
  specs.push_back(rectangular);
  for (const auto& input : inputs) {
    for (PoolSpec s : specs) {
      for (const bool floor : {false, true}) {
        s.floor = floor;
        s.max = true;
        check_forward(s, input, true);
        check_forward(s, input, false);
        s.max = false;
        check_forward(s, input, false);
      }
    }
  }
}

XTRAIN_DEVICE_TEST_F(PoolingTest, GlobalPooling) {
  auto layer = make(testing::layer_param_from(R"(name: "gp" type: "Pooling"
      pooling_param { pool: AVE global_pooling: true })"),
                    {2, 3, 4, 5});
  ASSERT_EQ(output_.shape(), (std::vector<int>{2, 3, 1, 1}));
  layer->forward({&input_}, {&output_});
  for (int p = 0; p < 6; ++p) {
    const float* x = input_.cpu_data() + p * 20;
    EXPECT_NEAR(output_.cpu_data()[p], std::accumulate(x, x + 20, 0.0) / 20, 1e-5);
  }
  // The kernel follows the input when it is reshaped.
  input_.reshape({1, 3, 2, 2});
  fill_distinct(input_, 4);
  layer->forward({&input_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 3, 1, 1}));
  const float* x = input_.cpu_data();
  EXPECT_NEAR(output_.cpu_data()[0], (x[0] + x[1] + x[2] + x[3]) / 4, 1e-5);
}

XTRAIN_DEVICE_TEST_F(PoolingTest, GradientMax) {
  auto layer = make(pool_param(square(true, 3, 2, 1)), {2, 2, 5, 6});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(PoolingTest, GradientMaxWithMaskTop) {
  PoolSpec s;
  s.kernel_h = 2;
  s.kernel_w = 3;
  s.stride_h = 2;
  s.stride_w = 2;
  auto layer = make(pool_param(s), {1, 2, 5, 6}, true);
  testing::GradientChecker().check(*layer, {&input_}, {&output_, &mask_});
}

XTRAIN_DEVICE_TEST_F(PoolingTest, GradientAverage) {
  auto layer = make(pool_param(square(false, 3, 2, 1)), {2, 2, 6, 5});
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
  auto global = make(testing::layer_param_from(R"(name: "gp" type: "Pooling"
      pooling_param { pool: AVE global_pooling: true })"),
                     {1, 2, 3, 3});
  testing::GradientChecker().check(*global, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(PoolingTest, UnpaddedWindowPastTheInputIsEmptyAsInCaffe) {
  // Width 5, kernel 1, stride 3, no padding: ceil(4/3) + 1 = 3 windows, the
  // last starting at 6, past the input. Caffe keeps it and outputs -FLT_MAX.
  PoolSpec s;
  s.kernel_h = s.kernel_w = 1;
  s.stride_h = 1;
  s.stride_w = 3;
  auto layer = make(pool_param(s), {1, 1, 1, 5}, true);
  const float values[] = {1, 2, 3, 4, 5};
  std::copy(values, values + 5, input_.mutable_cpu_data());
  layer->forward({&input_}, {&output_, &mask_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 1, 1, 3}));
  EXPECT_EQ(std::vector<float>(output_.cpu_data(), output_.cpu_data() + 3),
            (std::vector<float>{1, 4, -FLT_MAX}));
  EXPECT_EQ(mask_.cpu_data()[2], -1.0f);
  std::fill(output_.mutable_cpu_diff(), output_.mutable_cpu_diff() + 3, 1.0f);
  layer->backward({&output_, &mask_}, {true}, {&input_});  // the empty window adds nothing
  EXPECT_EQ(std::vector<float>(input_.cpu_diff(), input_.cpu_diff() + 5),
            (std::vector<float>{1, 0, 0, 1, 0}));
}

XTRAIN_DEVICE_TEST_F(PoolingTest, MaxBackwardRoutesToTheArgmax) {
  auto layer = make(pool_param(square(true, 2, 1)), {1, 1, 3, 3});
  const float values[] = {1, 5, 2, 4, 3, 9, 7, 8, 6};
  std::copy(values, values + 9, input_.mutable_cpu_data());
  layer->forward({&input_}, {&output_});
  const float top_diff[] = {1, 10, 100, 1000};
  std::copy(top_diff, top_diff + 4, output_.mutable_cpu_diff());
  layer->backward({&output_}, {true}, {&input_});
  // 9 is the max of two windows: its gradient is the sum.
  EXPECT_EQ(std::vector<float>(input_.cpu_diff(), input_.cpu_diff() + 9),
            (std::vector<float>{0, 1, 0, 0, 0, 1010, 0, 100, 0}));
}

TEST_F(PoolingTest, RejectsBadParameters) {
  // pooling_param settings, with words each message must have.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"pool: STOCHASTIC kernel_size: 2", {"layer 'p' (Pooling)", "STOCHASTIC", "not supported"}},
      {"global_pooling: true kernel_size: 2", {"global_pooling", "kernel_size"}},
      {"global_pooling: true stride: 2", {"global_pooling needs pad 0 and stride 1"}},
      {"kernel_size: 2 kernel_h: 2 kernel_w: 2", {"not both"}},
      {"kernel_h: 2", {"kernel_h and kernel_w"}},
      {"kernel_size: 2 pad: 1 pad_h: 1 pad_w: 1", {"pad_h and pad_w"}},
  };
  for (const auto& [settings, message_parts] : cases) {
    SCOPED_TRACE(settings);
    const std::string text = "name: 'p' type: 'Pooling' pooling_param { " + settings + " }";
    expect_error([&] { make(testing::layer_param_from(text), {1, 1, 4, 4}); }, message_parts);
  }
  // Windows that do not fit the input or the tops.
  struct BadWindow {
    PoolSpec spec;
    std::vector<int> input_shape;
    bool with_mask;
    std::vector<std::string> message_parts;
  };
  const BadWindow windows[] = {
      {square(true, 2, 2, 2),
       {1, 1, 4, 4},
       false,
       {"layer 'pool' (Pooling)", "pad 2x2", "smaller than the kernel 2x2"}},
      {square(true, 5, 1), {1, 1, 3, 3}, false, {"does not fit", "1 1 3 3"}},
      {square(true, 2, 2), {1, 4, 4}, false, {"4 axes"}},
      // AVE has no mask top.
      {square(false, 2, 2), {1, 1, 4, 4}, true, {"layer 'pool' (Pooling)", "at most 1 top"}},
  };
  for (const BadWindow& bad : windows) {
    expect_error([&] { make(pool_param(bad.spec), bad.input_shape, bad.with_mask); },
                 bad.message_parts);
  }
}

}  // namespace
}  // namespace xtrain

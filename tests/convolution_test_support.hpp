// Shared by the convolution engine tests: geometries covering what Caffe's
// convolution allows, random inputs, and one engine run through forward and
// both backward passes, compared with the im2col + GEMM reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "layer_test_support.hpp"
#include "layers/convolution_engine.hpp"
#include "layers/gemm_convolution.hpp"
#include "layers/onednn_convolution.hpp"

namespace xtrain::convolution_testing {

struct Geometry {
  const char* name;
  int num, channels, height, width, num_output;
  int kernel_h, kernel_w;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int group = 1;
  bool bias = true;
};

// Failure messages name the geometry instead of dumping its bytes.
inline void PrintTo(const Geometry& g, std::ostream* out) { *out << g.name; }

inline ConvolutionShape shape_of(const Geometry& g) {
  ConvolutionShape shape;
  shape.num = g.num;
  shape.geometry.channels = g.channels;
  shape.geometry.height = g.height;
  shape.geometry.width = g.width;
  shape.geometry.kernel_h = g.kernel_h;
  shape.geometry.kernel_w = g.kernel_w;
  shape.geometry.stride_h = g.stride_h;
  shape.geometry.stride_w = g.stride_w;
  shape.geometry.pad_h = g.pad_h;
  shape.geometry.pad_w = g.pad_w;
  shape.geometry.dilation_h = g.dilation_h;
  shape.geometry.dilation_w = g.dilation_w;
  shape.num_output = g.num_output;
  shape.group = g.group;
  shape.bias_term = g.bias;
  return shape;
}

// Geometry{name, N, C, H, W, num_output, kh, kw, sh, sw, ph, pw, dh, dw, group, bias}
inline const std::vector<Geometry>& geometries() {
  static const std::vector<Geometry> all = {
      {"plain_3x3", 2, 3, 7, 6, 4, 3, 3},
      {"batch_1", 1, 5, 9, 9, 7, 3, 3},
      {"pad_and_stride", 2, 4, 9, 9, 6, 3, 3, 2, 2, 1, 1},
      {"rectangular", 2, 3, 8, 7, 5, 3, 2, 2, 1, 1, 0},
      {"dilation", 2, 3, 11, 10, 4, 3, 3, 1, 1, 2, 2, 2, 2},
      {"rectangular_dilation", 2, 2, 9, 12, 3, 2, 3, 1, 2, 0, 1, 3, 2},
      {"pad_wider_than_half_kernel", 2, 3, 5, 5, 2, 3, 3, 1, 1, 2, 2},
      {"stride_leaves_a_remainder", 2, 3, 8, 8, 4, 3, 3, 2, 2},
      {"groups", 2, 4, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2},
      {"depthwise", 2, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8},
      {"no_bias", 3, 4, 6, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, false},
      {"one_by_one", 2, 16, 5, 5, 8, 1, 1},
      {"one_by_one_stride_2", 2, 6, 7, 7, 4, 1, 1, 2, 2},
      {"one_by_one_large_image", 2, 32, 28, 28, 16, 1, 1},
      {"blocked_channels", 3, 32, 10, 10, 64, 3, 3, 1, 1, 1, 1},
      {"lenet_conv2", 4, 20, 12, 12, 50, 5, 5},
      {"cifar10_conv1", 2, 3, 32, 32, 32, 5, 5, 1, 1, 2, 2},
      {"alexnet_conv1", 2, 3, 227, 227, 96, 11, 11, 4, 4},
      {"alexnet_conv2", 2, 96, 27, 27, 256, 5, 5, 1, 1, 2, 2, 1, 1, 2},
      {"alexnet_conv4", 2, 384, 13, 13, 384, 3, 3, 1, 1, 1, 1, 1, 1, 2},
  };
  return all;
}

inline bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

inline std::vector<float> uniform(std::size_t count, std::uint64_t seed) {
  std::vector<float> values(count);
  RandomStream(seed).uniform(count, -1.0f, 1.0f, values.data());
  return values;
}

// |actual - expected| within float rounding of sums of many products: a
// small fraction of the largest expected value.
inline void expect_close(const std::vector<float>& actual, const std::vector<float>& expected,
                  const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  float largest = 0;
  for (float value : expected) largest = std::max(largest, std::fabs(value));
  const float tolerance = 1e-5f + 1e-4f * largest;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (std::fabs(actual[i] - expected[i]) > tolerance) {
      if (++wrong <= 3) {
        ADD_FAILURE() << what << " element " << i << ": " << actual[i] << " vs reference "
                      << expected[i] << " (tolerance " << tolerance << ")";
      }
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": elements off";
}

// One set of arrays for a shape, run through an engine.
struct Results {
  std::vector<float> top, bottom_diff, weight_diff, bias_diff;
};

struct Inputs {
  explicit Inputs(const ConvolutionShape& shape)
      : bottom(uniform(shape.num * shape.input_dim(), 1)),
        weights(uniform(shape.weight_count(), 2)),
        bias(uniform(shape.num_output, 3)),
        top_diff(uniform(shape.num * shape.output_dim(), 4)),
        // Diffs that already hold gradients: backward must add onto them.
        weight_diff(uniform(shape.weight_count(), 5)),
        bias_diff(uniform(shape.num_output, 6)) {}
  std::vector<float> bottom, weights, bias, top_diff, weight_diff, bias_diff;
};

// How backward runs: the two passes called one by one, or through
// backward(), which shares the converted top_diff between them.
enum class BackwardCall { kSeparatePasses, kCombined };

inline Results run(ConvolutionEngine& engine, const Inputs& in,
            BackwardCall call = BackwardCall::kSeparatePasses) {
  const ConvolutionShape& shape = engine.shape();
  Results out;
  out.top.assign(shape.num * shape.output_dim(), 7.0f);  // garbage: forward overwrites
  out.bottom_diff.assign(shape.num * shape.input_dim(), 7.0f);
  out.weight_diff = in.weight_diff;
  out.bias_diff = in.bias_diff;
  engine.forward(in.bottom.data(), in.weights.data(), in.bias.data(), out.top.data());
  float* bias_diff = shape.bias_term ? out.bias_diff.data() : nullptr;
  if (call == BackwardCall::kCombined) {
    engine.backward(in.bottom.data(), in.top_diff.data(), in.weights.data(), out.weight_diff.data(),
                    bias_diff, out.bottom_diff.data());
    return out;
  }
  engine.backward_data(in.top_diff.data(), in.weights.data(), out.bottom_diff.data());
  engine.backward_weights(in.bottom.data(), in.top_diff.data(), out.weight_diff.data(), bias_diff);
  return out;
}

// Runs `engine` on `inputs`, backward called each way of `calls`, and
// expects the reference's numbers `expected`; without a bias term the bias
// diff must stay as it was.
inline void expect_matches_reference(ConvolutionEngine& engine, const Inputs& inputs,
                                     const Results& expected,
                                     std::initializer_list<BackwardCall> calls = {
                                         BackwardCall::kSeparatePasses, BackwardCall::kCombined}) {
  for (BackwardCall call : calls) {
    SCOPED_TRACE(call == BackwardCall::kCombined ? "combined backward" : "separate passes");
    const Results actual = run(engine, inputs, call);
    expect_close(actual.top, expected.top, "forward");
    expect_close(actual.bottom_diff, expected.bottom_diff, "backward data");
    expect_close(actual.weight_diff, expected.weight_diff, "weight gradient");
    if (engine.shape().bias_term) {
      expect_close(actual.bias_diff, expected.bias_diff, "bias gradient");
    } else {
      EXPECT_EQ(actual.bias_diff, inputs.bias_diff) << "no bias: its diff is not touched";
    }
  }
}

// A test over the geometries: the geometry's shape_, its inputs_, and
// gemm_results(), what the im2col + GEMM engine computes from them (the
// reference).
class GeometryTest : public ::testing::TestWithParam<Geometry> {
 protected:
  GeometryTest() : shape_(shape_of(GetParam())), inputs_(shape_) {}

  Results gemm_results() const {
    GemmConvolution gemm(shape_);
    return run(gemm, inputs_);
  }

  const ConvolutionShape shape_;
  const Inputs inputs_;
};

// The same, skipped where the build has no oneDNN.
class OnednnGeometryTest : public GeometryTest {
 protected:
  void SetUp() override {
    if (!onednn_available()) GTEST_SKIP() << "built without oneDNN";
  }
};

}  // namespace xtrain::convolution_testing

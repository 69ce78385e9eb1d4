// Deconvolution: forward against a direct scatter loop, Caffe's output size
// and weight layout, groups/dilation/1x1, bilinear upsampling, gradients and
// bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

struct DeconvSpec {
  std::vector<int> input;  // N, C, H, W
  int num_output = 2;
  int kernel_h = 3, kernel_w = 3;
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dilation = 1;
  int group = 1;
  bool bias = true;

  int out_h() const {
    return stride_h * (input[2] - 1) + dilation * (kernel_h - 1) + 1 - 2 * pad_h;
  }
  int out_w() const {
    return stride_w * (input[3] - 1) + dilation * (kernel_w - 1) + 1 - 2 * pad_w;
  }

  std::string text() const {
    return "name: 'up' type: 'Deconvolution' convolution_param { num_output: " +
           std::to_string(num_output) + " kernel_h: " + std::to_string(kernel_h) +
           " kernel_w: " + std::to_string(kernel_w) + " pad_h: " + std::to_string(pad_h) +
           " pad_w: " + std::to_string(pad_w) + " stride_h: " + std::to_string(stride_h) +
           " stride_w: " + std::to_string(stride_w) + " dilation: " + std::to_string(dilation) +
           " group: " + std::to_string(group) + " bias_term: " + (bias ? "true" : "false") +
           " weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' } }";
  }
};

// The definition: every input pixel scatters weight-scaled copies of itself.
std::vector<float> direct_deconvolution(const Blob& input, const Blob& weights, const Blob* bias,
                                        const DeconvSpec& s) {
  const int num = input.shape(0), channels = input.shape(1);
  const int height = input.shape(2), width = input.shape(3);
  const int out_h = s.out_h(), out_w = s.out_w();
  const int channels_per_group = channels / s.group;
  const int outputs_per_group = s.num_output / s.group;
  std::vector<double> out(static_cast<std::size_t>(num) * s.num_output * out_h * out_w, 0.0);
  const float* w = weights.cpu_data();
  for (int n = 0; n < num; ++n) {
    for (int c = 0; c < channels; ++c) {
      const int g = c / channels_per_group;
      for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
          const double value = input.cpu_data()[input.offset(n, c, y, x)];
          for (int o = 0; o < outputs_per_group; ++o) {
            const int out_c = g * outputs_per_group + o;
            for (int i = 0; i < s.kernel_h; ++i) {
              for (int j = 0; j < s.kernel_w; ++j) {
                const int oy = y * s.stride_h - s.pad_h + i * s.dilation;
                const int ox = x * s.stride_w - s.pad_w + j * s.dilation;
                if (oy < 0 || oy >= out_h || ox < 0 || ox >= out_w) continue;
                out[((static_cast<std::size_t>(n) * s.num_output + out_c) * out_h + oy) * out_w +
                    ox] +=
                    value * w[((c * outputs_per_group + o) * s.kernel_h + i) * s.kernel_w + j];
              }
            }
          }
        }
      }
    }
  }
  std::vector<float> result;
  for (std::size_t k = 0; k < out.size(); ++k) {
    const int out_c = static_cast<int>(k / (out_h * out_w)) % s.num_output;
    result.push_back(static_cast<float>(out[k] + (bias ? bias->cpu_data()[out_c] : 0.0)));
  }
  return result;
}

class DeconvolutionTest : public ::testing::Test {
 protected:
  std::unique_ptr<Layer> make(const DeconvSpec& spec) {
    input_.reshape(spec.input);
    fill_uniform(input_, 5);
    auto layer = make_layer(spec.text());
    layer->setup({&input_}, {&output_});
    return layer;
  }

  void check_forward(const DeconvSpec& spec) {
    auto layer = make(spec);
    const std::vector<int> weight_shape = {spec.input[1], spec.num_output / spec.group,
                                           spec.kernel_h, spec.kernel_w};
    EXPECT_EQ(layer->blobs()[0]->shape(), weight_shape);
    ASSERT_EQ(output_.shape(),
              (std::vector<int>{spec.input[0], spec.num_output, spec.out_h(), spec.out_w()}));
    layer->forward({&input_}, {&output_});
    testing::expect_near_all(
        data_of(output_),
        direct_deconvolution(input_, *layer->blobs()[0],
                             spec.bias ? layer->blobs()[1].get() : nullptr, spec),
        1e-4f);
  }

  Blob input_;
  Blob output_;
};

DeconvSpec spec(std::vector<int> input, int num_output, int kernel) {
  DeconvSpec s;
  s.input = std::move(input);
  s.num_output = num_output;
  s.kernel_h = s.kernel_w = kernel;
  return s;
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, ForwardPlain) { check_forward(spec({2, 3, 4, 5}, 4, 3)); }

TEST_F(DeconvolutionTest, ForwardStridePadAndRectangular) {
  DeconvSpec s = spec({2, 2, 3, 4}, 3, 4);
  s.stride_h = s.stride_w = 2;
  s.pad_h = s.pad_w = 1;
  check_forward(s);  // 3 -> 6, 4 -> 8
  s = spec({1, 2, 3, 3}, 2, 3);
  s.kernel_w = 2;
  s.stride_h = 3;
  s.pad_w = 1;
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, ForwardGroupsDilationAndOneByOne) {
  DeconvSpec s = spec({2, 4, 3, 3}, 6, 3);
  s.group = 2;
  check_forward(s);
  s = spec({1, 2, 3, 4}, 2, 3);
  s.dilation = 2;
  s.pad_h = s.pad_w = 1;
  check_forward(s);
  s = spec({2, 3, 3, 2}, 4, 1);
  s.bias = false;
  check_forward(s);
}

TEST_F(DeconvolutionTest, KnownShapes) {
  // FCN-style 2x upsampling: kernel 4, stride 2, pad 1 doubles the size.
  input_.reshape({1, 21, 16, 16});
  auto up = make_layer(
      "name: 'up' type: 'Deconvolution' convolution_param { num_output: 21 kernel_size: 4 "
      "stride: 2 pad: 1 group: 21 bias_term: false }");
  up->setup({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 21, 32, 32}));
  EXPECT_EQ(up->blobs()[0]->shape(), (std::vector<int>{21, 1, 4, 4}));
  // FCN-32s: kernel 64, stride 32: 10 -> 32 * 9 + 64 = 352.
  input_.reshape({1, 2, 10, 10});
  auto up32 = make_layer(
      "name: 'up' type: 'Deconvolution' convolution_param { num_output: 3 kernel_size: 64 "
      "stride: 32 bias_term: false }");
  up32->setup({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 3, 352, 352}));
  EXPECT_EQ(up32->blobs()[0]->shape(), (std::vector<int>{2, 3, 64, 64}));
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, BilinearFillerUpsamplesAConstantToAConstant) {
  input_.reshape({1, 2, 4, 4});
  for (std::size_t i = 0; i < input_.count(); ++i) input_.mutable_cpu_data()[i] = 3.0f;
  auto layer = make_layer(
      "name: 'up' type: 'Deconvolution' convolution_param { num_output: 2 kernel_size: 4 "
      "stride: 2 pad: 1 group: 2 bias_term: false weight_filler { type: 'bilinear' } }");
  layer->setup({&input_}, {&output_});
  layer->forward({&input_}, {&output_});
  ASSERT_EQ(output_.shape(), (std::vector<int>{1, 2, 8, 8}));
  // Away from the border every output pixel gets weights summing to 1.
  for (int c = 0; c < 2; ++c) {
    for (int y = 1; y < 7; ++y) {
      for (int x = 1; x < 7; ++x) {
        EXPECT_NEAR(output_.cpu_data()[output_.offset(0, c, y, x)], 3.0f, 1e-5f);
      }
    }
  }
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, GradientStridePad) {
  DeconvSpec s = spec({2, 2, 3, 3}, 3, 3);
  s.stride_h = s.stride_w = 2;
  s.pad_h = s.pad_w = 1;
  auto layer = make(s);
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, GradientGroupsDilationRectangular) {
  DeconvSpec s = spec({1, 4, 3, 2}, 2, 2);
  s.kernel_w = 3;
  s.group = 2;
  s.dilation = 2;
  s.stride_w = 2;
  auto layer = make(s);
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(DeconvolutionTest, GradientOneByOneAndTwoBottoms) {
  auto layer = make(spec({2, 3, 2, 3}, 2, 1));
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
  Blob second_input({2, 3, 2, 3}), second_output;
  fill_uniform(second_input, 9);
  auto shared = make_layer(spec({2, 3, 2, 3}, 2, 2).text());
  shared->setup({&input_, &second_input}, {&output_, &second_output});
  testing::GradientChecker().check(*shared, {&input_, &second_input}, {&output_, &second_output});
}

TEST_F(DeconvolutionTest, RejectsBadInput) {
  DeconvSpec s = spec({1, 2, 2, 2}, 2, 3);
  s.pad_h = s.pad_w = 2;  // 1 * 1 + 3 - 4 = 0
  expect_error([&] { make(s); },
               {"layer 'up' (Deconvolution)", "1 2 2 2", "output of 0x0", "less padding"});
  DeconvSpec grouped = spec({1, 3, 2, 2}, 4, 3);
  grouped.group = 2;
  expect_error([&] { make(grouped); }, {"layer 'up' (Deconvolution)", "3 channels", "group 2"});

  LayerParameter param = testing::layer_param_from(spec({1, 2, 2, 2}, 3, 2).text());
  Blob conv_layout({3, 2, 2, 2});  // (num_output, C, kh, kw): a Convolution's layout
  Blob bias({3});
  conv_layout.to_proto(param.add_blobs());
  bias.to_proto(param.add_blobs());
  input_.reshape({1, 2, 2, 2});
  expect_error([&] { testing::create_layer(param)->setup({&input_}, {&output_}); },
               {"layer 'up' (Deconvolution)", "(3, 2, 2, 2)", "(2, 3, 2, 2)",
                "(input channels, num_output / group"});
}

}  // namespace
}  // namespace xtrain

// Convolution: forward against a direct (six nested loops) convolution,
// Caffe's known output shapes, gradients, preloaded weights and bad input.
#include <gtest/gtest.h>

#include <memory>
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

struct ConvSpec {
  std::vector<int> input;  // N, C, H, W
  int num_output = 2;
  int kernel_h = 3;
  int kernel_w = 3;
  int pad_h = 0;
  int pad_w = 0;
  int stride_h = 1;
  int stride_w = 1;
  int dilation_h = 1;
  int dilation_w = 1;
  int group = 1;
  bool bias = true;

  int out_h() const {
    return (input[2] + 2 * pad_h - (dilation_h * (kernel_h - 1) + 1)) / stride_h + 1;
  }
  int out_w() const {
    return (input[3] + 2 * pad_w - (dilation_w * (kernel_w - 1) + 1)) / stride_w + 1;
  }
};

// Uses the square forms where the two axes agree and the _h/_w (or per-axis
// repeated) forms where they differ, so both spellings are exercised.
LayerParameter conv_param(const ConvSpec& s) {
  LayerParameter param;
  param.set_name("conv");
  param.set_type("Convolution");
  ConvolutionParameter* conv = param.mutable_convolution_param();
  conv->set_num_output(s.num_output);
  conv->set_bias_term(s.bias);
  conv->set_group(s.group);
  if (s.kernel_h == s.kernel_w) {
    conv->add_kernel_size(s.kernel_h);
  } else {
    conv->set_kernel_h(s.kernel_h);
    conv->set_kernel_w(s.kernel_w);
  }
  if (s.pad_h == s.pad_w) {
    if (s.pad_h != 0) conv->add_pad(s.pad_h);
  } else {
    conv->add_pad(s.pad_h);
    conv->add_pad(s.pad_w);
  }
  if (s.stride_h == s.stride_w) {
    if (s.stride_h != 1) conv->add_stride(s.stride_h);
  } else {
    conv->set_stride_h(s.stride_h);
    conv->set_stride_w(s.stride_w);
  }
  if (s.dilation_h != s.dilation_w) {
    conv->add_dilation(s.dilation_h);
    conv->add_dilation(s.dilation_w);
  } else if (s.dilation_h != 1) {
    conv->add_dilation(s.dilation_h);
  }
  conv->mutable_weight_filler()->set_type("gaussian");
  conv->mutable_weight_filler()->set_std(0.5f);
  conv->mutable_bias_filler()->set_type("gaussian");
  conv->mutable_bias_filler()->set_std(0.5f);
  return param;
}

// The definition, loop by loop.
std::vector<float> direct_convolution(const Blob& input, const Blob& weights, const Blob* bias,
                                      const ConvSpec& s) {
  const int num = input.shape(0), channels = input.shape(1);
  const int height = input.shape(2), width = input.shape(3);
  const int out_h = s.out_h(), out_w = s.out_w();
  const int channels_per_group = channels / s.group;
  const int outputs_per_group = s.num_output / s.group;
  const float* x = input.cpu_data();
  const float* w = weights.cpu_data();
  std::vector<float> out;
  for (int n = 0; n < num; ++n) {
    for (int o = 0; o < s.num_output; ++o) {
      const int g = o / outputs_per_group;
      for (int y = 0; y < out_h; ++y) {
        for (int xo = 0; xo < out_w; ++xo) {
          double sum = bias ? bias->cpu_data()[o] : 0.0;
          for (int c = 0; c < channels_per_group; ++c) {
            const int in_c = g * channels_per_group + c;
            for (int i = 0; i < s.kernel_h; ++i) {
              for (int j = 0; j < s.kernel_w; ++j) {
                const int in_y = y * s.stride_h - s.pad_h + i * s.dilation_h;
                const int in_x = xo * s.stride_w - s.pad_w + j * s.dilation_w;
                if (in_y < 0 || in_y >= height || in_x < 0 || in_x >= width) continue;
                sum += static_cast<double>(
                           w[((o * channels_per_group + c) * s.kernel_h + i) * s.kernel_w + j]) *
                       x[((n * channels + in_c) * height + in_y) * width + in_x];
              }
            }
          }
          out.push_back(static_cast<float>(sum));
        }
      }
    }
  }
  return out;
}

class ConvolutionTest : public testing::OneInputLayerTest {
 protected:
  void check_forward(const ConvSpec& spec) {
    SCOPED_TRACE("input " + shape_to_string(spec.input) + " kernel " +
                 std::to_string(spec.kernel_h) + "x" + std::to_string(spec.kernel_w) + " pad " +
                 std::to_string(spec.pad_h) + "x" + std::to_string(spec.pad_w) + " stride " +
                 std::to_string(spec.stride_h) + "x" + std::to_string(spec.stride_w) +
                 " dilation " + std::to_string(spec.dilation_h) + "x" +
                 std::to_string(spec.dilation_w) + " group " + std::to_string(spec.group));
    auto layer = make(conv_param(spec), spec.input);
    const std::vector<int> weight_shape = {spec.num_output, spec.input[1] / spec.group,
                                           spec.kernel_h, spec.kernel_w};
    ASSERT_EQ(layer->blobs().size(), spec.bias ? 2u : 1u);
    EXPECT_EQ(layer->blobs()[0]->shape(), weight_shape);
    if (spec.bias) {
      EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{spec.num_output});
    }
    const std::vector<int> top_shape = {spec.input[0], spec.num_output, spec.out_h(), spec.out_w()};
    ASSERT_EQ(output_.shape(), top_shape);

    layer->forward({&input_}, {&output_});
    const std::vector<float> expected = direct_convolution(
        input_, *layer->blobs()[0], spec.bias ? layer->blobs()[1].get() : nullptr, spec);
    ASSERT_EQ(expected.size(), output_.count());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(output_.cpu_data()[i], expected[i], 1e-4f) << "element " << i;
    }
  }

  // Like make(), with a second bottom of the same shape (other values) and
  // its own top: bottoms input_, second_input_; tops output_, second_output_.
  std::unique_ptr<Layer> make_two_bottoms(const ConvSpec& spec) {
    second_input_.reshape(spec.input);
    testing::fill_uniform(second_input_, 17);
    input_.reshape(spec.input);
    testing::fill_uniform(input_, 3);
    auto layer = testing::create_layer(conv_param(spec));
    layer->setup({&input_, &second_input_}, {&output_, &second_output_});
    return layer;
  }

  Blob second_input_;
  Blob second_output_;
};

ConvSpec spec(std::vector<int> input, int num_output, int kernel_h, int kernel_w) {
  ConvSpec s;
  s.input = std::move(input);
  s.num_output = num_output;
  s.kernel_h = kernel_h;
  s.kernel_w = kernel_w;
  return s;
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardPlain) { check_forward(spec({2, 3, 5, 6}, 4, 3, 3)); }

TEST_F(ConvolutionTest, ForwardPadAndStride) {
  ConvSpec s = spec({2, 3, 7, 6}, 3, 3, 3);
  s.pad_h = s.pad_w = 1;
  s.stride_h = s.stride_w = 2;
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardDilation) {
  ConvSpec s = spec({1, 2, 9, 8}, 3, 3, 3);
  s.dilation_h = s.dilation_w = 2;
  s.pad_h = s.pad_w = 1;
  check_forward(s);
  s.dilation_h = 3;  // per-axis dilation
  s.dilation_w = 1;
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardGroups) {
  ConvSpec s = spec({2, 4, 5, 5}, 6, 3, 3);
  s.group = 2;
  s.pad_h = s.pad_w = 1;
  check_forward(s);
  s = spec({1, 6, 4, 4}, 3, 2, 2);
  s.group = 3;
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardRectangularKernelPadStride) {
  ConvSpec s = spec({2, 2, 7, 6}, 3, 3, 2);
  s.pad_h = 0;
  s.pad_w = 1;  // per-axis repeated pad
  s.stride_h = 2;
  s.stride_w = 1;  // stride_h / stride_w
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardOneByOneKernelWithoutBias) {
  ConvSpec s = spec({2, 5, 3, 4}, 3, 1, 1);
  s.bias = false;
  check_forward(s);
  s.stride_h = s.stride_w = 2;  // 1x1 but strided: the im2col path
  check_forward(s);
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ForwardKernelOverhangingTheEdgeAsCaffe) {
  // (2 - 3) / 2 + 1 == 1 in integer division: Caffe makes one output whose
  // window hangs over the edge and reads zeros there.
  ConvSpec s = spec({1, 1, 2, 2}, 1, 3, 3);
  s.stride_h = s.stride_w = 2;
  check_forward(s);
}

TEST_F(ConvolutionTest, KnownCaffeShapes) {
  // LeNet conv1: 28 -> 24.
  auto lenet = make(testing::layer_param_from(R"(name: "conv1" type: "Convolution"
      convolution_param { num_output: 20 kernel_size: 5 stride: 1 })"),
                    {2, 1, 28, 28});
  EXPECT_EQ(output_.shape(), (std::vector<int>{2, 20, 24, 24}));
  EXPECT_EQ(lenet->blobs()[0]->shape(), (std::vector<int>{20, 1, 5, 5}));
  // AlexNet conv1: 227 -> 55 with an 11x11 kernel, stride 4.
  make(testing::layer_param_from(R"(name: "conv1" type: "Convolution"
      convolution_param { num_output: 96 kernel_size: 11 stride: 4 })"),
       {1, 3, 227, 227});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 96, 55, 55}));
  // AlexNet conv2: 27 -> 27 with pad 2, kernel 5, group 2.
  auto conv2 = make(testing::layer_param_from(R"(name: "conv2" type: "Convolution"
      convolution_param { num_output: 256 pad: 2 kernel_size: 5 group: 2 })"),
                    {1, 96, 27, 27});
  EXPECT_EQ(output_.shape(), (std::vector<int>{1, 256, 27, 27}));
  EXPECT_EQ(conv2->blobs()[0]->shape(), (std::vector<int>{256, 48, 5, 5}));
}

TEST_F(ConvolutionTest, DefaultFillersAreZeroAndFillersAreSeeded) {
  // Caffe's default filler is constant 0.
  auto layer = make(testing::layer_param_from(R"(name: "c" type: "Convolution"
      convolution_param { num_output: 2 kernel_size: 2 })"),
                    {1, 1, 3, 3});
  EXPECT_EQ(layer->blobs()[0]->asum_data(), 0.0);
  EXPECT_EQ(layer->blobs()[1]->asum_data(), 0.0);
  // The same seed gives the same weights.
  const LayerParameter param = testing::layer_param_from(R"(name: "c" type: "Convolution"
      convolution_param { num_output: 2 kernel_size: 2 weight_filler { type: "xavier" } })");
  auto first = testing::create_layer(param);
  auto second = testing::create_layer(param);
  first->seed(5);
  second->seed(5);
  Blob top2;
  first->setup({&input_}, {&output_});
  second->setup({&input_}, {&top2});
  ASSERT_GT(first->blobs()[0]->asum_data(), 0.0);
  for (std::size_t i = 0; i < first->blobs()[0]->count(); ++i) {
    EXPECT_EQ(first->blobs()[0]->cpu_data()[i], second->blobs()[0]->cpu_data()[i]);
  }
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, SeveralBottomsShareTheWeights) {
  const ConvSpec s = spec({2, 2, 4, 5}, 3, 2, 3);
  auto layer = make_two_bottoms(s);
  layer->forward({&input_, &second_input_}, {&output_, &second_output_});
  const auto expected_first =
      direct_convolution(input_, *layer->blobs()[0], layer->blobs()[1].get(), s);
  const auto expected_second =
      direct_convolution(second_input_, *layer->blobs()[0], layer->blobs()[1].get(), s);
  for (std::size_t i = 0; i < expected_first.size(); ++i) {
    ASSERT_NEAR(output_.cpu_data()[i], expected_first[i], 1e-4f);
    ASSERT_NEAR(second_output_.cpu_data()[i], expected_second[i], 1e-4f);
  }
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ChannelAxisOtherThanOne) {
  // axis: 2 on (2, 3, C=2, 4, 4) is a batch of 6 images of 2 channels.
  LayerParameter param = conv_param(spec({6, 2, 4, 4}, 3, 3, 3));
  param.mutable_convolution_param()->set_axis(2);
  input_.reshape({2, 3, 2, 4, 4});
  testing::fill_uniform(input_, 3);
  auto layer = testing::create_layer(param);
  layer->setup({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{2, 3, 3, 2, 2}));
  layer->forward({&input_}, {&output_});
  Blob flat({6, 2, 4, 4});
  std::copy(input_.cpu_data(), input_.cpu_data() + input_.count(), flat.mutable_cpu_data());
  const auto expected = direct_convolution(flat, *layer->blobs()[0], layer->blobs()[1].get(),
                                           spec({6, 2, 4, 4}, 3, 3, 3));
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(output_.cpu_data()[i], expected[i], 1e-4f);
  }
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, GradientPadStride) {
  ConvSpec s = spec({2, 3, 5, 5}, 2, 3, 3);
  s.pad_h = s.pad_w = 1;
  s.stride_h = s.stride_w = 2;
  auto layer = make(conv_param(s), s.input);
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, GradientGroupsDilationRectangular) {
  ConvSpec s = spec({2, 4, 6, 5}, 4, 2, 3);
  s.group = 2;
  s.dilation_h = 2;
  s.pad_w = 1;
  s.pad_h = 0;
  auto layer = make(conv_param(s), s.input);
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, GradientOneByOne) {
  ConvSpec s = spec({2, 3, 3, 4}, 2, 1, 1);
  auto layer = make(conv_param(s), s.input);
  testing::GradientChecker().check(*layer, {&input_}, {&output_});
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, GradientTwoBottoms) {
  auto layer = make_two_bottoms(spec({1, 2, 4, 4}, 2, 3, 3));
  testing::GradientChecker().check(*layer, {&input_, &second_input_}, {&output_, &second_output_});
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ParamGradientsAccumulate) {
  auto layer = make(conv_param(spec({2, 2, 4, 4}, 2, 3, 3)), {2, 2, 4, 4});
  layer->forward({&input_}, {&output_});
  testing::fill_uniform(output_, 0);
  std::copy(output_.cpu_data(), output_.cpu_data() + output_.count(), output_.mutable_cpu_diff());
  for (auto& blob : layer->blobs()) blob->scale_diff(0.0f);
  layer->backward({&output_}, {false}, {&input_});
  const std::vector<float> weight_once(layer->blobs()[0]->cpu_diff(),
                                       layer->blobs()[0]->cpu_diff() + layer->blobs()[0]->count());
  const float bias_once = layer->blobs()[1]->cpu_diff()[1];
  layer->backward({&output_}, {false}, {&input_});
  for (std::size_t i = 0; i < weight_once.size(); ++i) {
    EXPECT_FLOAT_EQ(layer->blobs()[0]->cpu_diff()[i], 2 * weight_once[i]);
  }
  EXPECT_FLOAT_EQ(layer->blobs()[1]->cpu_diff()[1], 2 * bias_once);
}

TEST_F(ConvolutionTest, KeepsPreloadedWeights) {
  LayerParameter param = conv_param(spec({1, 2, 3, 3}, 1, 2, 2));
  Blob weights({1, 2, 2, 2});
  for (int i = 0; i < 8; ++i) weights.mutable_cpu_data()[i] = static_cast<float>(i + 1);
  Blob bias({1, 1, 1, 1});  // legacy 4-d bias shape
  bias.mutable_cpu_data()[0] = 0.5f;
  weights.to_proto(param.add_blobs());
  bias.to_proto(param.add_blobs());
  auto layer = make(param, {1, 2, 3, 3});
  ASSERT_EQ(layer->blobs().size(), 2u);
  EXPECT_EQ(layer->blobs()[0]->cpu_data()[7], 8.0f);
  EXPECT_EQ(layer->blobs()[1]->shape(), std::vector<int>{1});
  EXPECT_EQ(layer->blobs()[1]->cpu_data()[0], 0.5f);
  EXPECT_TRUE(layer->param_propagate_down(0));
  EXPECT_TRUE(layer->param_propagate_down(1));

  LayerParameter wrong = conv_param(spec({1, 2, 3, 3}, 1, 3, 3));
  weights.to_proto(wrong.add_blobs());
  bias.to_proto(wrong.add_blobs());
  expect_error(
      [&] {
        make(wrong, {1, 2, 3, 3});
      },
      {"layer 'conv' (Convolution)", "weight", "(1, 2, 2, 2)", "(1, 2, 3, 3)"});
  LayerParameter missing_bias = conv_param(spec({1, 2, 3, 3}, 1, 2, 2));
  weights.to_proto(missing_bias.add_blobs());
  expect_error([&] { make(missing_bias, {1, 2, 3, 3}); }, {"conv", "bias_term"});
}

TEST_F(ConvolutionTest, RejectsBadGroup) {
  ConvSpec s = spec({1, 3, 5, 5}, 4, 3, 3);
  s.group = 2;
  expect_error([&] { make(conv_param(s), s.input); },
               {"layer 'conv' (Convolution)", "3 channels", "group 2"});
  s = spec({1, 4, 5, 5}, 3, 3, 3);
  s.group = 2;
  expect_error([&] { make(conv_param(s), s.input); }, {"num_output 3", "group 2"});
}

TEST_F(ConvolutionTest, RejectsKernelLargerThanInput) {
  const ConvSpec s = spec({1, 1, 5, 5}, 2, 7, 7);
  expect_error([&] { make(conv_param(s), s.input); },
               {"layer 'conv' (Convolution)", "does not fit", "1 1 5 5", "7x7"});
  ConvSpec dilated = spec({1, 1, 5, 5}, 2, 3, 3);
  dilated.dilation_h = dilated.dilation_w = 3;  // extent 7
  expect_error([&] { make(conv_param(dilated), dilated.input); }, {"extent 7x7"});
}

// Kernel, stride and num_output settings that conflict or are missing, with
// words each message must have.
TEST_F(ConvolutionTest, RejectsInconsistentKernelParams) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"num_output: 2 kernel_size: 3 kernel_h: 3 kernel_w: 3",
       {"layer 'c' (Convolution)", "kernel_size", "not both"}},
      {"num_output: 2", {"kernel_size", "required"}},
      {"num_output: 2 kernel_h: 3", {"kernel size must be > 0"}},
      {"num_output: 2 kernel_size: 3 kernel_size: 3 kernel_size: 3", {"kernel_size has 3 values"}},
      {"num_output: 2 kernel_size: 3 stride: 2 stride_h: 2 stride_w: 2", {"stride", "not both"}},
      {"num_output: 0 kernel_size: 3", {"num_output must be > 0"}},
  };
  for (const auto& [settings, message_parts] : cases) {
    SCOPED_TRACE(settings);
    const std::string text = "name: 'c' type: 'Convolution' convolution_param { " + settings + " }";
    expect_error([&] { make(testing::layer_param_from(text), {1, 1, 5, 5}); }, message_parts);
  }
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, RejectsNdAndChangedChannels) {
  expect_error(
      [&] {
        make(conv_param(spec({1, 1, 5}, 2, 3, 3)), {2, 1, 5});
      },
      {"layer 'conv' (Convolution)", "not supported yet"});
  auto layer = make(conv_param(spec({1, 2, 5, 5}, 2, 3, 3)), {1, 2, 5, 5});
  input_.reshape({1, 3, 5, 5});
  expect_error([&] { layer->forward({&input_}, {&output_}); },
               {"layer 'conv' (Convolution)", "1 3 5 5", "3 channels", "expect 2"});
}

XTRAIN_DEVICE_TEST_F(ConvolutionTest, ReshapesWithTheInput) {
  const ConvSpec s = spec({1, 2, 5, 5}, 2, 3, 3);
  auto layer = make(conv_param(s), s.input);
  ConvSpec bigger = s;
  bigger.input = {3, 2, 7, 6};
  input_.reshape(bigger.input);
  testing::fill_uniform(input_, 8);
  layer->forward({&input_}, {&output_});
  EXPECT_EQ(output_.shape(), (std::vector<int>{3, 2, 5, 4}));
  const auto expected =
      direct_convolution(input_, *layer->blobs()[0], layer->blobs()[1].get(), bigger);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(output_.cpu_data()[i], expected[i], 1e-4f);
  }
}

}  // namespace
}  // namespace xtrain

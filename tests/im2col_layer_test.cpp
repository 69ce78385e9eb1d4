// Im2col: a 3x3 image's 2x2 patches by hand; padded, strided, dilated and
// rectangular geometries against the formula computed here entry by entry;
// col2im's gradient by hand (overlapping patches add) and against finite
// differences; and the errors.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "device_test_support.hpp"
#include "gradient_checker.hpp"
#include "layer_test_support.hpp"

namespace xtrain {
namespace {

using namespace testing;

std::string im2col(const std::string& settings) {
  return "name: 'cols' type: 'Im2col' convolution_param { " + settings + " }";
}

XTRAIN_DEVICE_TEST(Im2colLayerTest, TwoByTwoPatchesOfAThreeByThreeImage) {
  Blob image({1, 1, 3, 3});
  Blob top;
  set_data(image, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto layer = make_layer(im2col("kernel_size: 2"));
  layer->setup({&image}, {&top});
  layer->forward({&image}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{1, 4, 2, 2}));
  // Row (i, j) holds the pixel at offset (i, j) of each of the four patches.
  EXPECT_EQ(data_of(top), (std::vector<float>{1, 2, 4, 5,     // (0, 0)
                                              2, 3, 5, 6,     // (0, 1)
                                              4, 5, 7, 8,     // (1, 0)
                                              5, 6, 8, 9}));  // (1, 1)
  set_diff(top, std::vector<float>(16, 1.0f));
  layer->backward({&top}, {true}, {&image});
  // Each pixel's gradient counts the patches that read it.
  EXPECT_EQ(diff_of(image), (std::vector<float>{1, 2, 1, 2, 4, 2, 1, 2, 1}));
}

struct Geometry {
  int kh, kw, ph, pw, sh, sw, dh, dw;
};

// The entry the formula gives: image[n][c][y*sh - ph + i*dh][x*sw - pw + j*dw].
std::vector<float> reference_columns(const Blob& image, const Geometry& g) {
  const int n_images = image.shape(0), channels = image.shape(1);
  const int height = image.shape(2), width = image.shape(3);
  const int out_h = (height + 2 * g.ph - (g.dh * (g.kh - 1) + 1)) / g.sh + 1;
  const int out_w = (width + 2 * g.pw - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
  std::vector<float> columns;
  for (int n = 0; n < n_images; ++n)
    for (int c = 0; c < channels; ++c)
      for (int i = 0; i < g.kh; ++i)
        for (int j = 0; j < g.kw; ++j)
          for (int y = 0; y < out_h; ++y)
            for (int x = 0; x < out_w; ++x) {
              const int in_y = y * g.sh - g.ph + i * g.dh;
              const int in_x = x * g.sw - g.pw + j * g.dw;
              const bool inside = in_y >= 0 && in_y < height && in_x >= 0 && in_x < width;
              columns.push_back(
                  inside ? image.cpu_data()[((n * channels + c) * height + in_y) * width + in_x]
                         : 0.0f);
            }
  return columns;
}

XTRAIN_DEVICE_TEST(Im2colLayerTest, GeometriesMatchTheFormula) {
  const std::vector<std::pair<std::string, Geometry>> cases = {
      {"kernel_size: 3 pad: 1 stride: 2", {3, 3, 1, 1, 2, 2, 1, 1}},
      {"kernel_h: 2 kernel_w: 3 pad_h: 1 pad_w: 0 stride_h: 1 stride_w: 2",
       {2, 3, 1, 0, 1, 2, 1, 1}},
      {"kernel_size: 2 dilation: 2 pad: 2", {2, 2, 2, 2, 1, 1, 2, 2}},
      {"kernel_size: 3 kernel_size: 1 stride: 1 stride: 3", {3, 1, 0, 0, 1, 3, 1, 1}},
  };
  for (const auto& [settings, geometry] : cases) {
    SCOPED_TRACE(settings);
    Blob image({2, 3, 6, 7});
    Blob top;
    testing::fill_uniform(image, 71);
    auto layer = make_layer(im2col(settings));
    layer->setup({&image}, {&top});
    layer->forward({&image}, {&top});
    EXPECT_EQ(data_of(top), reference_columns(image, geometry));
    EXPECT_EQ(top.shape(0), 2);
    EXPECT_EQ(top.shape(1), 3 * geometry.kh * geometry.kw);
  }
}

XTRAIN_DEVICE_TEST(Im2colLayerTest, GradientMatchesFiniteDifferences) {
  Blob image({2, 2, 5, 4});
  Blob top;
  testing::fill_uniform(image, 72);
  auto layer = make_layer(im2col("kernel_size: 3 pad: 1 stride: 1 dilation: 1"));
  layer->setup({&image}, {&top});
  testing::GradientChecker().check(*layer, {&image}, {&top});
}

XTRAIN_DEVICE_TEST(Im2colLayerTest, ChannelAxisTwoTreatsTheAxesBeforeAsImages) {
  Blob image({2, 3, 1, 3, 3});
  Blob top;
  testing::fill_uniform(image, 73);
  auto layer = make_layer(im2col("kernel_size: 2 axis: 2"));
  layer->setup({&image}, {&top});
  layer->forward({&image}, {&top});
  EXPECT_EQ(top.shape(), (std::vector<int>{2, 3, 4, 2, 2}));
  Blob flat({6, 1, 3, 3});
  set_data(flat, data_of(image));
  EXPECT_EQ(data_of(top), reference_columns(flat, {2, 2, 0, 0, 1, 1, 1, 1}));
}

XTRAIN_DEVICE_TEST(Im2colLayerTest, ErrorsNameTheLayer) {
  Blob top;
  Blob volume({1, 2, 3, 4, 5});
  auto three_d = make_layer(im2col("kernel_size: 2"));
  expect_setup_error(*three_d, {&volume}, {&top}, {"'cols'", "3 spatial axes", "only 2-D"});

  Blob image({1, 1, 3, 3});
  auto nd = make_layer(im2col("kernel_size: 2 force_nd_im2col: true"));
  expect_setup_error(*nd, {&image}, {&top}, {"'cols'", "force_nd_im2col"});

  auto too_big = make_layer(im2col("kernel_size: 5"));
  expect_setup_error(*too_big, {&image}, {&top}, {"'cols'", "does not fit", "3x3"});

  auto no_kernel = make_layer(im2col("stride: 2"));
  expect_setup_error(*no_kernel, {&image}, {&top}, {"'cols'", "kernel_size"});
}

}  // namespace
}  // namespace xtrain

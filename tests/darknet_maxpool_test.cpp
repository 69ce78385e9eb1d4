// Darknet's [maxpool] as Caffe's Pooling (and a Crop): the converted net's
// output against a direct implementation of Darknet's windows, over sizes,
// strides, paddings and input sizes.
#include "interchange/darknet_maxpool.hpp"

#include <gtest/gtest.h>

#include <cfloat>
#include <random>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "interchange/darknet_model.hpp"
#include "xtrain/net.hpp"

namespace xtrain {
namespace {

using interchange::caffe_pooling_for;

struct Pool {
  int size;
  int stride;
  int padding;  // Darknet's, default size - 1
};

// Darknet's max pooling, written from its definition: out = (n + padding -
// size) / stride + 1 windows per axis, window i from i stride - padding / 2,
// values outside the input left out.
std::vector<float> darknet_maxpool(const std::vector<float>& input, int channels, int height,
                                   int width, const Pool& pool, int* out_h, int* out_w) {
  *out_h = (height + pool.padding - pool.size) / pool.stride + 1;
  *out_w = (width + pool.padding - pool.size) / pool.stride + 1;
  const int offset = -(pool.padding / 2);
  std::vector<float> output;
  for (int c = 0; c < channels; ++c) {
    for (int i = 0; i < *out_h; ++i) {
      for (int j = 0; j < *out_w; ++j) {
        float best = -FLT_MAX;
        for (int n = 0; n < pool.size; ++n) {
          for (int m = 0; m < pool.size; ++m) {
            const int y = offset + i * pool.stride + n;
            const int x = offset + j * pool.stride + m;
            if (y >= 0 && y < height && x >= 0 && x < width) {
              best = std::max(best, input[(c * height + y) * width + x]);
            }
          }
        }
        output.push_back(best);
      }
    }
  }
  return output;
}

std::string maxpool_cfg(int height, int width, const Pool& pool) {
  return "[net]\nchannels=2\nheight=" + std::to_string(height) +
         "\nwidth=" + std::to_string(width) + "\n[maxpool]\nsize=" + std::to_string(pool.size) +
         "\nstride=" + std::to_string(pool.stride) + "\npadding=" + std::to_string(pool.padding) +
         "\n";
}

// The converted net's output for a random input, against Darknet's.
void expect_darknet_windows(int height, int width, const Pool& pool, std::mt19937& random) {
  const interchange::DarknetModel model =
      interchange::convert_darknet_cfg(maxpool_cfg(height, width, pool), "pool.cfg");
  NetParameter param;
  LayerParameter& input = *param.add_layer();
  input.set_name("data");
  input.set_type("Input");
  input.add_top("data");
  BlobShape& shape = *input.mutable_input_param()->add_shape();
  for (int dim : {1, 2, height, width}) shape.add_dim(dim);
  for (const LayerParameter& layer : model.layers.layer()) *param.add_layer() = layer;
  NetOptions options;
  options.verbose = false;
  Net net(param, options);
  Blob& data = *net.blob_by_name("data");
  std::uniform_real_distribution<float> values(-5, 5);
  std::vector<float> pixels(data.count());
  for (float& pixel : pixels) pixel = values(random);
  std::copy(pixels.begin(), pixels.end(), data.mutable_cpu_data());
  net.forward();
  int out_h = 0, out_w = 0;
  const std::vector<float> expected =
      darknet_maxpool(pixels, 2, height, width, pool, &out_h, &out_w);
  const Blob& top = *net.blob_by_name(model.output);
  ASSERT_EQ(top.shape(), (std::vector<int>{1, 2, out_h, out_w}))
      << height << "x" << width << " size " << pool.size << " stride " << pool.stride << " padding "
      << pool.padding;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(top.cpu_data()[i], expected[i])
        << "at " << i << ", " << height << "x" << width << " size " << pool.size << " stride "
        << pool.stride << " padding " << pool.padding;
  }
}

TEST(DarknetMaxpool, YoloTinysStrideOnePoolingIsPaddedAndCropped) {
  // 13 x 13, size 2, stride 1: Darknet keeps 13 windows from 0; Caffe's pad 1
  // gives 14 from -1, of which the crop keeps the last 13.
  const auto plan = caffe_pooling_for({13, 2, 1, 1}, {13, 2, 1, 1});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->pad_h, 1);
  EXPECT_EQ(plan->offset_w, 1);
  EXPECT_EQ(plan->pooled_h, 14);
  EXPECT_EQ(plan->darknet_h, 13);
  EXPECT_TRUE(plan->needs_crop());
  // Size 2, stride 2 (its other poolings) is Caffe's own, odd sizes too.
  const auto halving = caffe_pooling_for({13, 2, 2, 1}, {26, 2, 2, 1});
  ASSERT_TRUE(halving.has_value());
  EXPECT_FALSE(halving->needs_crop());
  EXPECT_EQ(halving->pooled_h, 7);
  EXPECT_EQ(halving->pooled_w, 13);
}

TEST(DarknetMaxpool, ConvertedPoolingTakesDarknetsWindows) {
  std::mt19937 random(23);
  int converted = 0, refused = 0;
  for (int size = 1; size <= 4; ++size) {
    for (int stride = 1; stride <= 3; ++stride) {
      for (int padding : {size - 1, 0, 1, 2, size}) {
        for (int height = 1; height <= 9; ++height) {
          const int width = height + (height % 2);  // square and oblong inputs
          const Pool pool{size, stride, padding};
          if (height + padding < size) continue;  // Darknet itself has no window
          const std::string refusal = testing::error_of(
              [&] { interchange::convert_darknet_cfg(maxpool_cfg(height, width, pool), "p"); });
          if (refusal != "(no error)") {
            // Refused only for paddings beyond the default: no pad below
            // the size keeps Darknet's windows, or Darknet keeps a window
            // that starts past the input, which no crop size reaches.
            EXPECT_GT(padding, size - 1) << refusal;
            EXPECT_TRUE(refusal.find("keeps windows no Caffe pooling") != std::string::npos ||
                        refusal.find("more than a crop of the") != std::string::npos)
                << refusal;
            ++refused;
            continue;
          }
          expect_darknet_windows(height, width, pool, random);
          ++converted;
        }
      }
    }
  }
  // 449 of the 510 convert (all the default paddings among them); the rest
  // have paddings of size or more.
  EXPECT_EQ(converted + refused, 510);
  EXPECT_LE(refused, 61) << converted << " converted, " << refused << " refused";
}

TEST(DarknetMaxpool, DefaultPaddingWithStrideOneOrTwoIsAlwaysConverted) {
  std::mt19937 random(7);
  for (int size = 1; size <= 4; ++size) {
    for (int height = size; height <= 14; ++height) {
      expect_darknet_windows(height, height, {size, 1, size - 1}, random);
      if (size == 2) expect_darknet_windows(height, height + 3, {2, 2, 1}, random);
    }
  }
}

}  // namespace
}  // namespace xtrain

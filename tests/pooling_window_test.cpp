// The window arithmetic the CPU and GPU pooling kernels share
// (layers/pooling_window.hpp), against brute force: the clipped bounds and
// Caffe's divisor of every window, the windows that hold each input (which
// the GPU backward kernels loop over), and the rule that decides when cuDNN's
// average pooling is Caffe's (pooling_layer.hpp).
#include "layers/pooling_window.hpp"

#include <gtest/gtest.h>

#include "layers/pooling_kernels.hpp"
#include "layers/pooling_layer.hpp"

namespace xtrain {
namespace {

struct Axis {
  int input, kernel, pad, stride;
};

// Every axis geometry the Pooling layer accepts within small bounds
// (pad < kernel), with and without padding elsewhere, rounded up and down.
template <typename Body>
void for_each_axis(Body body) {
  for (int input = 1; input <= 9; ++input) {
    for (int kernel = 1; kernel <= 5; ++kernel) {
      for (int pad = 0; pad < kernel; ++pad) {
        for (int stride = 1; stride <= 4; ++stride) {
          for (const bool any_padding : {false, true}) {
            if (pad > 0 && !any_padding) continue;
            for (const bool round_up : {true, false}) {  // round_mode CEIL and FLOOR
              const int pooled = pooled_size(input, kernel, pad, stride, any_padding, round_up);
              if (pooled <= 0) continue;
              body(Axis{input, kernel, pad, stride}, pooled);
            }
          }
        }
      }
    }
  }
}

TEST(PoolingWindowTest, BoundsAndDivisorAreTheWindowClippedToImageAndPaddedImage) {
  for_each_axis([](const Axis& a, int pooled) {
    for (int y = 0; y < pooled; ++y) {
      const int start = y * a.stride - a.pad;
      int first_in_image = -1, last_in_image = -1, in_padded = 0;
      for (int i = start; i < start + a.kernel; ++i) {
        if (i >= 0 && i < a.input) {
          if (first_in_image < 0) first_in_image = i;
          last_in_image = i;
        }
        if (i >= -a.pad && i < a.input + a.pad) ++in_padded;
      }
      const PoolingWindow w = pooling_window(y, a.kernel, a.pad, a.stride, a.input);
      SCOPED_TRACE(testing::Message() << "input " << a.input << " kernel " << a.kernel << " pad "
                                      << a.pad << " stride " << a.stride << " window " << y);
      if (first_in_image >= 0) {
        EXPECT_EQ(w.begin, first_in_image);
        EXPECT_EQ(w.end, last_in_image + 1);
        EXPECT_EQ(w.divisor_extent, in_padded);
      } else {
        // A window past the input (no padding, stride > kernel): empty, and
        // Caffe's divisor there is min(start + k, in) - start <= 0, kept as is.
        EXPECT_GE(w.begin, w.end);
        EXPECT_LE(w.divisor_extent, 0);
      }
    }
  });
}

TEST(PoolingWindowTest, WindowsHoldingAnInputAreExactlyThoseWhoseBoundsContainIt) {
  for_each_axis([](const Axis& a, int pooled) {
    for (int position = 0; position < a.input; ++position) {
      int first = -1, last = -1;
      for (int y = 0; y < pooled; ++y) {
        const PoolingWindow w = pooling_window(y, a.kernel, a.pad, a.stride, a.input);
        if (w.begin <= position && position < w.end) {
          if (first < 0) first = y;
          EXPECT_TRUE(last < 0 || last == y - 1) << "the windows holding an input are contiguous";
          last = y;
        }
      }
      const PoolingWindowRange range = windows_holding(position, a.kernel, a.pad, a.stride, pooled);
      SCOPED_TRACE(testing::Message()
                   << "input " << a.input << " kernel " << a.kernel << " pad " << a.pad
                   << " stride " << a.stride << " position " << position);
      if (first < 0) {
        EXPECT_GE(range.first, range.last);
      } else {
        EXPECT_EQ(range.first, first);
        EXPECT_EQ(range.last, last + 1);
      }
    }
  });
}

PoolingGeometry square(int input, int kernel, int pad, int stride) {
  const int pooled = pooled_size(input, kernel, pad, stride, pad > 0, true);
  return {1, input, input, kernel, kernel, pad, pad, stride, stride, pooled, pooled};
}

TEST(PoolingWindowTest, CudnnAverageRuleHoldsOnlyWhereEveryWindowIsWhole) {
  int agreeing = 0, disagreeing = 0;
  for_each_axis([&](const Axis& a, int pooled) {
    const PoolingGeometry g = square(a.input, a.kernel, a.pad, a.stride);
    if (g.pooled_h != pooled) return;  // the any_padding=false variant of a padded axis
    if (!cudnn_average_pooling_is_caffes(g)) {
      ++disagreeing;
      return;
    }
    ++agreeing;
    // What cuDNN computes: floor-mode windows, each divided by kernel^2.
    EXPECT_EQ(pooled, (a.input + 2 * a.pad - a.kernel) / a.stride + 1);
    for (int y = 0; y < pooled; ++y) {
      EXPECT_EQ(pooling_window(y, a.kernel, a.pad, a.stride, a.input).divisor_extent, a.kernel)
          << "input " << a.input << " kernel " << a.kernel << " pad " << a.pad << " stride "
          << a.stride << " window " << y;
    }
  });
  EXPECT_GT(agreeing, 100);
  EXPECT_GT(disagreeing, 100);
}

TEST(PoolingWindowTest, CudnnAverageRuleOnKnownNets) {
  EXPECT_TRUE(cudnn_average_pooling_is_caffes(square(55, 3, 0, 2)));  // AlexNet pool1: 27
  EXPECT_TRUE(cudnn_average_pooling_is_caffes(square(7, 7, 0, 1)));   // GoogLeNet's global 7x7
  EXPECT_TRUE(cudnn_average_pooling_is_caffes(square(28, 3, 1, 1)));  // inception 3x3/1 pad 1
  // GoogLeNet pool1 3x3/2 on 112: Caffe's ceil gives 56 outputs, cuDNN's floor 55.
  EXPECT_FALSE(cudnn_average_pooling_is_caffes(square(112, 3, 0, 2)));
  // CIFAR-10 quick pool2 3x3/2 on 16: 8 (ceil) against 7 (floor).
  EXPECT_FALSE(cudnn_average_pooling_is_caffes(square(16, 3, 0, 2)));
  // Equal sizes on one axis only are not enough.
  PoolingGeometry mixed = square(55, 3, 0, 2);
  mixed.width = 16;
  mixed.pooled_w = pooled_size(16, 3, 0, 2, false, true);
  EXPECT_FALSE(cudnn_average_pooling_is_caffes(mixed));
}

}  // namespace
}  // namespace xtrain

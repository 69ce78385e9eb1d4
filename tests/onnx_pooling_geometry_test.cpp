// Caffe's pooling windows in ONNX terms (src/interchange/pooling_geometry):
// the lengths and end pads the exporter writes and the checks the importer
// makes, on hand-worked border cases.
#include <gtest/gtest.h>

#include "interchange/pooling_geometry.hpp"

namespace xtrain::interchange {
namespace {

TEST(OnnxPoolingGeometry, CaffeRoundsUpAndDropsAWindowStartingInThePadding) {
  // 13 wide, kernel 3, stride 2: ceil(10 / 2) + 1 = 6 (floor would give 6 too).
  EXPECT_EQ(caffe_pooled_length({13, 3, 2, 0, false}), 6);
  // 14 wide: ceil(11 / 2) + 1 = 7 where floor gives 6.
  EXPECT_EQ(caffe_pooled_length({14, 3, 2, 0, false}), 7);
  // 5 wide, kernel 2, stride 3, pad 1: ceil(5 / 3) + 1 = 3, but window 2
  // would start at 6 - 1 = 5, in the end padding: 2.
  EXPECT_EQ(caffe_pooled_length({5, 2, 3, 1, true}), 2);
  // An unpadded axis (5 wide, kernel 1, stride 3: windows at 0, 3, 6) drops
  // its window at 6 only when the layer pads its other axis.
  EXPECT_EQ(caffe_pooled_length({5, 1, 3, 0, true}), 2);
  EXPECT_EQ(caffe_pooled_length({5, 1, 3, 0, false}), 3);
}

TEST(OnnxPoolingGeometry, MaxPoolEndPadGivesCaffesLengthWithFloorRounding) {
  // 6 wide, kernel 3, stride 2, pad 1: Caffe 4 windows, the last [5, 8).
  const PoolingAxis axis{6, 3, 2, 1, true};
  EXPECT_EQ(caffe_pooled_length(axis), 4);
  EXPECT_EQ(onnx_end_pad(axis, 1, 0), 2);
  EXPECT_EQ(onnx_pooled_length(6, 3, 2, 1, 2, false), 4);
  // ONNX's symmetric pads with floor rounding would lose the last window.
  EXPECT_EQ(onnx_pooled_length(6, 3, 2, 1, 1, false), 3);
}

TEST(OnnxPoolingGeometry, CaffesAverageDividesByTheWindowClippedToThePadding) {
  // 6 wide, kernel 3, stride 2, pad 1: windows [-1, 2), [1, 4), [3, 6),
  // [5, 8); the last is clipped to 7 = 6 + pad.
  EXPECT_EQ(caffe_average_divisors({6, 3, 2, 1, true}), (std::vector<int>{3, 3, 3, 2}));
  // Unpadded, 9 wide, kernel 2, stride 2: the fifth window [8, 10) holds 1.
  EXPECT_EQ(caffe_average_divisors({9, 2, 2, 0, false}), (std::vector<int>{2, 2, 2, 2, 1}));
  // The export's AveragePool (pads 1 and 2, counting pads) divides each by
  // 3: the factor 3 / 2 on the last window makes Caffe's average.
  OnnxPoolingAxis onnx{6, 3, 2, 1, 2};  // input, kernel, stride, begin and end pads
  onnx.count_include_pad = true;
  EXPECT_TRUE(caffe_has_same_windows(onnx, true, true));
  EXPECT_EQ(onnx_average_divisors(onnx), (std::vector<int>{3, 3, 3, 3}));
}

TEST(OnnxPoolingGeometry, ImportSeesDivisorsCaffeDoesNotUse) {
  OnnxPoolingAxis onnx{6, 3, 2, 1, 2};  // input, kernel, stride, begin and end pads
  // count_include_pad 0 divides the first window by 2 (Caffe: 3).
  EXPECT_EQ(onnx_average_divisors(onnx), (std::vector<int>{2, 3, 3, 1}));
  // ceil_mode with pads 1 and 1: Caffe's four windows, but the last
  // ([5, 8)) reaches past the end pad (7): runtimes differ, so it is refused.
  onnx.end_pad = 1;
  onnx.ceil_mode = true;
  EXPECT_TRUE(caffe_has_same_windows(onnx, true, true));
  EXPECT_TRUE(onnx_average_divisors(onnx).empty());
  // Floor rounding with pads 1 and 1 has three windows: not Caffe's four.
  onnx.ceil_mode = false;
  EXPECT_FALSE(caffe_has_same_windows(onnx, true, true));
}

TEST(OnnxPoolingGeometry, PyTorchCeilModeMaxPoolIsCaffes) {
  // nn.MaxPool2d(3, 2, ceil_mode=True) on 112 (GoogLeNet's stem): 56 windows.
  OnnxPoolingAxis onnx{112, 3, 2};  // input, kernel, stride
  onnx.ceil_mode = true;
  EXPECT_EQ(caffe_pooled_length({112, 3, 2, 0, false}), 56);
  EXPECT_TRUE(caffe_has_same_windows(onnx, false, true));
}

TEST(OnnxPoolingGeometry, FloorRoundModeIsOnnxFloorWithTheSamePadAtBothEnds) {
  // ResNet's stem, nn.MaxPool2d(3, 2, 1) on 112: ONNX (ceil_mode 0, pads 1
  // and 1) has floor(111 / 2) + 1 = 56 windows; Caffe 1.0's CEIL has 57,
  // round_mode FLOOR 56.
  OnnxPoolingAxis onnx{112, 3, 2, 1, 1};  // input, kernel, stride, begin and end pads
  EXPECT_EQ(caffe_pooled_length({112, 3, 2, 1, true}), 57);
  EXPECT_EQ(caffe_pooled_length({112, 3, 2, 1, true, false}), 56);
  EXPECT_FALSE(caffe_has_same_windows(onnx, true, true));
  EXPECT_TRUE(caffe_has_same_windows(onnx, true, false));
  // A FLOOR window never reaches past the padding: AVE divides by the
  // kernel everywhere, as AveragePool counting pads does.
  onnx.count_include_pad = true;
  EXPECT_EQ(caffe_average_divisors({112, 3, 2, 1, true, false}), onnx_average_divisors(onnx));
  EXPECT_EQ(caffe_average_divisors({7, 2, 2, 0, false, false}), (std::vector<int>{2, 2, 2}));
}

}  // namespace
}  // namespace xtrain::interchange

// WindowData: a hand-written window file over PNGs written here. Background
// items first, then foreground, with their labels; exact pixels of a window
// warped to its own size (mean_value, scale); mirroring; context_pad and
// square crops by Caffe's geometry worked out by hand; and errors naming the
// window file's line.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::error_of;
using testing::expect_error;
using testing::TempDir;

// An 8 x 8 colour image: B = x + 10 y, G = 100, R = 200.
cv::Mat test_image() {
  cv::Mat mat(8, 8, CV_8UC3);
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) mat.at<cv::Vec3b>(y, x) = cv::Vec3b(x + 10 * y, 100, 200);
  }
  return mat;
}

// Image 0 with a foreground window of class 2 at x 2..5, y 1..4, a
// background window (class 3, overlap 0.1: label 0) at x 0..3, y 0..3, and
// one between the thresholds, which is left out.
const char* kWindows =
    "# 0\n"
    "img.png\n3\n8\n8\n3\n"
    "2 0.9 2 1 5 4\n"
    "3 0.1 0 0 3 3\n"
    "1 0.4 0 0 7 7\n";

struct WindowFolder {
  explicit WindowFolder(const std::string& windows = kWindows) : dir("window_data") {
    cv::imwrite(dir.file("img.png"), test_image());
    dir.write("windows.txt", windows);
  }
  // `window_extra` goes inside window_data_param, `transform` into
  // transform_param.
  LayerParameter param(int batch_size, const std::string& window_extra,
                       const std::string& transform) const {
    LayerParameter param;
    read_proto_from_text_string(
        "name: 'windows' type: 'WindowData' top: 'data' top: 'label' window_data_param { "
        "source: '" +
            dir.file("windows.txt") + "' root_folder: '" + dir.path() + "/' batch_size: " +
            std::to_string(batch_size) + " fg_threshold: 0.5 bg_threshold: 0.3 " + window_extra +
            " } transform_param { " + transform + " }",
        &param);
    return param;
  }
  TempDir dir;
};

struct Batch {
  Blob data;
  Blob label;
  BlobVec tops() { return {&data, &label}; }
  // Channel c of item i, row-major.
  std::vector<float> plane(int item, int c) const {
    const int size = data.shape(2) * data.shape(3);
    const float* start = data.cpu_data() + (item * data.shape(1) + c) * size;
    return std::vector<float>(start, start + size);
  }
};

Batch run(const LayerParameter& param) {
  auto layer = LayerRegistry::global().create(param);
  Batch batch;
  layer->setup({}, batch.tops());
  layer->forward({}, batch.tops());
  return batch;
}

TEST(WindowDataLayer, BackgroundThenForegroundWithExactPixels) {
  WindowFolder folder;
  const Batch batch = run(folder.param(4, "fg_fraction: 0.5",
                                       "crop_size: 4 mean_value: 1 "
                                       "scale: 0.5"));
  EXPECT_EQ(batch.data.shape(), (std::vector<int>{4, 3, 4, 4}));
  const std::vector<float> labels(batch.label.cpu_data(), batch.label.cpu_data() + 4);
  EXPECT_EQ(labels, (std::vector<float>{0, 0, 2, 2}));
  // A 4 x 4 window warped to 4 x 4 is the window itself.
  std::vector<float> background;
  std::vector<float> foreground;
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      background.push_back((x + 10 * y - 1.0f) * 0.5f);
      foreground.push_back((x + 2 + 10 * (y + 1) - 1.0f) * 0.5f);
    }
  }
  EXPECT_EQ(batch.plane(0, 0), background);
  EXPECT_EQ(batch.plane(3, 0), foreground);
  EXPECT_EQ(batch.plane(3, 2), std::vector<float>(16, (200 - 1.0f) * 0.5f));
}

TEST(WindowDataLayer, AMeanFileIsReadAtItsCentralCrop) {
  // A 6 x 6 mean whose channel 0 is 10 y + x, read for a crop of 4 from
  // (1, 1): pixel x + 10 y of the background window minus 10 (y + 1) + x + 1
  // is -11 everywhere.
  WindowFolder folder;
  BlobProto mean;
  for (int dim : {1, 3, 6, 6}) mean.mutable_shape()->add_dim(dim);
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 6; ++y) {
      for (int x = 0; x < 6; ++x) mean.add_data(c == 0 ? static_cast<float>(10 * y + x) : 0.0f);
    }
  }
  write_proto_to_binary_file(mean, folder.dir.file("mean.binaryproto"));
  const Batch batch =
      run(folder.param(1, "fg_fraction: 0",
                       "crop_size: 4 mean_file: '" + folder.dir.file("mean.binaryproto") + "'"));
  EXPECT_EQ(batch.plane(0, 0), std::vector<float>(16, -11.0f));
  EXPECT_EQ(batch.plane(0, 1), std::vector<float>(16, 100.0f));
}

TEST(WindowDataLayer, MirrorFlipsSomeWindowsLeftToRight) {
  WindowFolder folder;
  const Batch batch = run(folder.param(16, "fg_fraction: 1", "crop_size: 4 mirror: true"));
  std::vector<float> plain;
  std::vector<float> flipped;
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      plain.push_back(static_cast<float>(x + 2 + 10 * (y + 1)));
      flipped.push_back(static_cast<float>(5 - x + 10 * (y + 1)));
    }
  }
  std::set<int> seen;
  for (int item = 0; item < 16; ++item) {
    const std::vector<float> values = batch.plane(item, 0);
    ASSERT_TRUE(values == plain || values == flipped) << "item " << item;
    seen.insert(values == plain ? 0 : 1);
  }
  EXPECT_EQ(seen.size(), 2u);  // 16 fair coins all alike: 1 in 32,768
}

TEST(WindowDataLayer, ContextPadLeavesThePartOutsideTheImageZero) {
  // The 2 x 2 window at the corner, crop 4, context_pad 1: widened by 4 / 2
  // about (1, 1) to x, y in -1..3 (5 wide), clipped to 0..3; scale 4 / 5, so
  // the 4 clipped pixels warp to round(3.2) = 3 and the clipped one pads
  // round(0.8) = 1: row 0 and column 0 stay 0, the rest is the image's
  // constant green.
  WindowFolder folder("# 0\nimg.png\n3\n8\n8\n1\n1 0.9 0 0 1 1\n");
  const Batch batch = run(folder.param(1, "fg_fraction: 1 context_pad: 1", "crop_size: 4"));
  std::vector<float> expected(16, 100.0f);
  for (int i = 0; i < 4; ++i) expected[i] = expected[4 * i] = 0.0f;
  EXPECT_EQ(batch.plane(0, 1), expected);
}

TEST(WindowDataLayer, SquareModeWidensTheShortSide) {
  // 4 x 2 window at x 2..5, y 3..4: square about (4, 4) with half side 2 is
  // x, y in 2..6, inside the image, warped to the whole 4 x 4 crop.
  WindowFolder folder("# 0\nimg.png\n3\n8\n8\n1\n1 0.9 2 3 5 4\n");
  const Batch batch = run(folder.param(1, "fg_fraction: 1 crop_mode: 'square'", "crop_size: 4"));
  EXPECT_EQ(batch.plane(0, 1), std::vector<float>(16, 100.0f));
  // Blue rises by 10 a row: the first row of the crop is from y = 2.
  EXPECT_LT(batch.plane(0, 0)[0], 30.0f);
  EXPECT_GT(batch.plane(0, 0)[15], 50.0f);
}

TEST(WindowDataLayer, SameSeedSameBatches) {
  WindowFolder folder(
      "# 0\nimg.png\n3\n8\n8\n3\n1 0.9 0 0 3 3\n2 0.8 4 4 7 7\n"
      "1 0.1 2 2 5 5\n");
  const LayerParameter param = folder.param(8, "", "crop_size: 4 mirror: true");
  EXPECT_EQ(run(param).plane(7, 0), run(param).plane(7, 0));
}

TEST(WindowDataLayer, CachedImagesGiveTheSameBatches) {
  WindowFolder folder;
  const Batch read = run(folder.param(4, "", "crop_size: 4 mirror: true"));
  const Batch cached = run(folder.param(4, "cache_images: true", "crop_size: 4 mirror: true"));
  for (int item = 0; item < 4; ++item) EXPECT_EQ(cached.plane(item, 0), read.plane(item, 0));
}

TEST(WindowDataLayer, ErrorsNameTheWindowFileLine) {
  WindowFolder folder("# 0\nimg.png\n3\n8\n8\n1\n0 0.9 0 0 3 3\n");
  EXPECT_NE(error_of([&] {
              run(folder.param(2, "", "crop_size: 4"));
            }).find("line 7: a foreground window (overlap 0.9"),
            std::string::npos);
  WindowFolder garbled("# 0\nimg.png\n3\neight\n8\n0\n");
  const std::string message = error_of([&] { run(garbled.param(2, "", "crop_size: 4")); });
  EXPECT_NE(message.find("layer 'windows' (WindowData)"), std::string::npos) << message;
  EXPECT_NE(message.find("line 4: expected the image height, found 'eight'"), std::string::npos)
      << message;
}

TEST(WindowDataLayer, AMissingImageFailsTheForwardNamingTheWindow) {
  WindowFolder folder("# 0\nnone.png\n3\n8\n8\n2\n1 0.9 0 0 3 3\n1 0.1 0 0 3 3\n");
  const std::string message = error_of([&] { run(folder.param(2, "", "crop_size: 4")); });
  EXPECT_NE(message.find("windows.txt' line 8"), std::string::npos) << message;
  EXPECT_NE(message.find("none.png"), std::string::npos) << message;
}

TEST(WindowDataLayer, WithoutACropSizeItSaysWhereToPutIt) {
  WindowFolder folder;
  expect_error([&] { run(folder.param(2, "", "")); }, {"transform_param { crop_size"});
}

TEST(WindowDataLayer, AScaleOrMeanThatIsNoNumberIsAnError) {
  WindowFolder folder;
  expect_error([&] { run(folder.param(2, "scale: nan", "crop_size: 4")); },
               {"layer 'windows' (WindowData)", "the scale is nan, not a finite number"});
  expect_error([&] { run(folder.param(2, "", "crop_size: 4 scale: 1e39")); }, {"the scale is inf"});
  expect_error([&] { run(folder.param(2, "", "crop_size: 4 mean_value: inf")); },
               {"mean_value inf is not a finite number"});
}

}  // namespace
}  // namespace xtrain

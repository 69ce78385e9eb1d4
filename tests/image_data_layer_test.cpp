// ImageData layer: real PNG files listed in a text file, read in list order
// (wrapping) or shuffled per epoch by seed, resized, grey or colour,
// transformed; a missing image fails the forward naming the list line.
#include "data/image_data_layer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "pattern_images.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using namespace testing;

using testing::error_of;

// Image i: pattern_mat(3, 5, 4, 10 * i) written as <dir>/images/img <i>.png
// (a space in the name), listed with label 20 + i.
struct ImageFolder {
  explicit ImageFolder(int count, int height = 5, int width = 4) : dir("image_data") {
    std::string list;
    for (int i = 0; i < count; ++i) {
      const std::string name = "img " + std::to_string(i) + ".png";
      dir.write("images/" + name, "");  // creates the folder
      cv::imwrite(dir.file("images/" + name), mat(i, height, width));
      list += name + " " + std::to_string(20 + i) + "\n";
    }
    dir.write("list.txt", list);
  }
  static cv::Mat mat(int i, int height = 5, int width = 4) {
    return pattern_mat(3, height, width, 10 * i);
  }
  std::string root() const { return dir.file("images") + "/"; }
  TempDir dir;
};

// `image_extra` goes inside image_data_param, `extra` after it.
LayerParameter image_param(const ImageFolder& folder, int batch_size,
                           const std::string& image_extra = "", const std::string& extra = "",
                           Phase phase = TRAIN) {
  LayerParameter param;
  read_proto_from_text_string(
      "name: 'images' type: 'ImageData' top: 'data' top: 'label' image_data_param { source: '" +
          folder.dir.file("list.txt") + "' root_folder: '" + folder.root() +
          "' batch_size: " + std::to_string(batch_size) + " " + image_extra + " } " + extra,
      &param);
  param.set_phase(phase);
  return param;
}

struct Tops {
  Blob data;
  Blob label;
  BlobVec both() { return {&data, &label}; }
  std::vector<float> item(int i) const {
    const std::size_t size = data.count(1);
    return std::vector<float>(data.cpu_data() + i * size, data.cpu_data() + (i + 1) * size);
  }
  std::vector<int> labels() const {
    std::vector<int> values;
    for (std::size_t i = 0; i < label.count(); ++i)
      values.push_back(static_cast<int>(label.cpu_data()[i]));
    return values;
  }
};

TEST(ImageDataLayer, ListOrderExactPixelsAndWrap) {
  ImageFolder folder(5);
  auto layer = LayerRegistry::global().create(image_param(folder, 2));
  EXPECT_STREQ(layer->type(), "ImageData");
  Tops tops;
  layer->setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{2, 3, 5, 4}));
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{2}));
  for (int n = 0; n < 4; ++n) {
    layer->forward({}, tops.both());
    for (int item = 0; item < 2; ++item) {
      const int image = (2 * n + item) % 5;
      EXPECT_EQ(tops.labels()[item], 20 + image);
      EXPECT_EQ(tops.item(item), planar_floats(ImageFolder::mat(image))) << n << "/" << item;
    }
  }
}

TEST(ImageDataLayer, TransformParamApplies) {
  ImageFolder folder(2);
  ImageDataLayer layer(image_param(
      folder, 2, "", "transform_param { crop_size: 3 mean_value: 10 scale: 0.5 }", TEST));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{2, 3, 3, 3}));
  layer.forward({}, tops.both());
  // Centre crop of 5 x 4: rows 1..3, columns 0..2.
  const cv::Mat crop = ImageFolder::mat(1)(cv::Rect(0, 1, 3, 3)).clone();
  std::vector<float> expected = planar_floats(crop);
  for (float& value : expected) value = (value - 10.0f) * 0.5f;
  EXPECT_EQ(tops.item(1), expected);
}

TEST(ImageDataLayer, ResizeAndGray) {
  ImageFolder folder(3);
  ImageDataLayer layer(image_param(folder, 3, "new_height: 7 new_width: 9 is_color: false"));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{3, 1, 7, 9}));
  layer.forward({}, tops.both());
  for (int i = 0; i < 3; ++i) {
    const cv::Mat gray =
        cv::imread(folder.root() + "img " + std::to_string(i) + ".png", cv::IMREAD_GRAYSCALE);
    cv::Mat resized;
    cv::resize(gray, resized, cv::Size(9, 7));  // bilinear, as Caffe
    EXPECT_EQ(tops.item(i), planar_floats(resized)) << i;
  }
}

std::vector<int> labels_of(const LayerParameter& param, std::uint64_t seed, int batches) {
  ImageDataLayer layer(param);
  layer.seed(seed);
  Tops tops;
  layer.setup({}, tops.both());
  std::vector<int> labels;
  for (int i = 0; i < batches; ++i) {
    layer.forward({}, tops.both());
    for (int label : tops.labels()) labels.push_back(label);
  }
  return labels;
}

// Each epoch is a permutation of the list, redrawn every epoch; the seed
// decides them all.
TEST(ImageDataLayer, ShuffleIsPerEpochAndDecidedByTheSeed) {
  ImageFolder folder(10);
  const LayerParameter param =
      image_param(folder, 5, "shuffle: true", "data_param { decode_threads: 2 }");
  const std::vector<int> first = labels_of(param, 5, 6);  // 3 epochs
  EXPECT_EQ(labels_of(param, 5, 6), first);
  EXPECT_NE(labels_of(param, 6, 6), first);
  std::vector<std::vector<int>> epochs;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int> order(first.begin() + epoch * 10, first.begin() + (epoch + 1) * 10);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<int>{20, 21, 22, 23, 24, 25, 26, 27, 28, 29})) << epoch;
    epochs.push_back(order);
  }
  EXPECT_TRUE(epochs[0] != epochs[1] || epochs[1] != epochs[2]);
  std::vector<int> list_order;
  for (int i = 0; i < 10; ++i) list_order.push_back(20 + i);
  EXPECT_NE(epochs[0], list_order);
}

TEST(ImageDataLayer, RandSkipStartsInTheList) {
  ImageFolder folder(6);
  const std::vector<int> labels = labels_of(image_param(folder, 2, "rand_skip: 6"), 3, 2);
  const int start = labels[0] - 20;
  for (int k = 0; k < 4; ++k) EXPECT_EQ(labels[k], 20 + (start + k) % 6);
}

// Line 3 names a missing file: the batches before it arrive; the forward
// that needs it throws, naming the list line and the path.
TEST(ImageDataLayer, MissingImageNamesListLineAndPath) {
  ImageFolder folder(2);
  folder.dir.write("list.txt", "img 0.png 1\n\nmissing.png 2\nimg 1.png 3\n");
  ImageDataLayer layer(image_param(folder, 1));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());
  EXPECT_EQ(tops.labels(), (std::vector<int>{1}));
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_NE(message.find("layer 'images' (ImageData): list '" + folder.dir.file("list.txt") +
                         "' line 3: "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("'" + folder.root() + "missing.png'"), std::string::npos) << message;
  EXPECT_EQ(error_of([&] { layer.forward({}, tops.both()); }), message);  // and stays failed

  folder.dir.write("list.txt", "missing.png 2\n");
  ImageDataLayer first_missing(image_param(folder, 1));
  const std::string setup_message = error_of([&] { first_missing.setup({}, tops.both()); });
  EXPECT_NE(setup_message.find("line 1: "), std::string::npos) << setup_message;
  EXPECT_NE(setup_message.find("missing.png"), std::string::npos) << setup_message;
}

TEST(ImageDataLayer, BadListsAndParameters) {
  ImageFolder folder(1);
  folder.dir.write("list.txt", "\n  \n");
  ImageDataLayer empty(image_param(folder, 1));
  Tops tops;
  expect_error([&] { empty.setup({}, tops.both()); }, {"names no image"});

  folder.dir.write("list.txt", "img 0.png 1\n");
  ImageDataLayer half_resize(image_param(folder, 1, "new_height: 4"));
  expect_error([&] { half_resize.setup({}, tops.both()); },
               {"new_height 4 and new_width 0; set both"});

  LayerParameter absent = image_param(folder, 1);
  absent.mutable_image_data_param()->set_source(folder.dir.file("absent.txt"));
  ImageDataLayer no_list(absent);
  const std::string message = error_of([&] { no_list.setup({}, tops.both()); });
  EXPECT_NE(message.find("layer 'images' (ImageData): cannot open the image list"),
            std::string::npos)
      << message;
}

// Images of another size without a resize: an error naming line and sizes.
TEST(ImageDataLayer, ImageOfOtherSizeIsAnError) {
  ImageFolder folder(1);
  cv::imwrite(folder.root() + "big.png", pattern_mat(3, 8, 8));
  folder.dir.write("list.txt", "img 0.png 1\nbig.png 2\n");
  ImageDataLayer layer(image_param(folder, 2));
  Tops tops;
  layer.setup({}, tops.both());
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_NE(message.find("line 2: image '" + folder.root() +
                         "big.png' has shape 3x8x8, but the first image has 3x5x4"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace xtrain

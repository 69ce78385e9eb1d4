// Image files for the image pipeline's tests, written with OpenCV directly
// (not with the code under test): real Fashion-MNIST digits as PNGs, and
// colour JPEGs of gradients and stripes in several sizes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "fashion_mnist_files.hpp"
#include "xtrain/idx_file.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain::testing {

struct ListedImage {
  std::string path;  // as written in the list (relative to the root folder)
  int label = 0;
};

// The first `count` Fashion-MNIST test images (callers skip without the data
// set: XTRAIN_SKIP_WITHOUT_FASHION_MNIST).
inline IdxDataset fashion_mnist_test_set(std::size_t count) {
  const std::string dir = fashion_mnist_dir();
  IdxDataset dataset =
      read_idx_dataset(dir + "/t10k-images-idx3-ubyte.gz", dir + "/t10k-labels-idx1-ubyte.gz");
  const std::size_t pixels = static_cast<std::size_t>(dataset.images.rows) * dataset.images.cols;
  dataset.images.count = count;
  dataset.images.pixels.resize(count * pixels);
  dataset.labels.resize(count);
  return dataset;
}

// Writes image i as <root>/<label>/<i>.png; returns the list entries.
inline std::vector<ListedImage> write_fashion_pngs(const std::string& root,
                                                   const IdxDataset& dataset) {
  std::vector<ListedImage> listed;
  for (std::size_t i = 0; i < dataset.images.count; ++i) {
    const int label = dataset.labels[i];
    const std::string relative = std::to_string(label) + "/img " + std::to_string(i) + ".png";
    std::filesystem::create_directories(root + "/" + std::to_string(label));
    const cv::Mat image(dataset.images.rows, dataset.images.cols, CV_8UC1,
                        const_cast<std::uint8_t*>(dataset.images.image(i)));
    EXPECT_TRUE(cv::imwrite(root + "/" + relative, image));
    listed.push_back({relative, label});
  }
  return listed;
}

// A colour test pattern: B, G, R gradients plus stripes that move with
// `seed`, so every image differs and JPEG has real detail to encode.
inline cv::Mat colour_pattern(int height, int width, int seed) {
  cv::Mat image(height, width, CV_8UC3);
  for (int h = 0; h < height; ++h) {
    for (int w = 0; w < width; ++w) {
      cv::Vec3b& pixel = image.at<cv::Vec3b>(h, w);
      pixel[0] = static_cast<std::uint8_t>((255 * w) / std::max(1, width - 1));
      pixel[1] = static_cast<std::uint8_t>((255 * h) / std::max(1, height - 1));
      pixel[2] = static_cast<std::uint8_t>(((w + h + 7 * seed) / 4 % 2) ? 200 : 40 + seed);
    }
  }
  return image;
}

// Colour JPEGs "<root>/colour/pattern <i>.jpg" of the given sizes (width, height).
inline std::vector<ListedImage> write_colour_jpegs(const std::string& root,
                                                   const std::vector<cv::Size>& sizes,
                                                   const std::string& extension = "jpg") {
  std::filesystem::create_directories(root + "/colour");
  std::vector<ListedImage> listed;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string relative = "colour/pattern " + std::to_string(i) + "." + extension;
    const cv::Mat image = colour_pattern(sizes[i].height, sizes[i].width, static_cast<int>(i));
    EXPECT_TRUE(cv::imwrite(root + "/" + relative, image));
    listed.push_back({relative, static_cast<int>(i % 5)});
  }
  return listed;
}

inline std::string list_text(const std::vector<ListedImage>& images) {
  std::string text;
  for (const ListedImage& image : images)
    text += image.path + " " + std::to_string(image.label) + "\n";
  return text;
}

// OpenCV's interleaved B, G, R -> planar, the layout Caffe's Datums hold.
inline std::string planar_bytes(const cv::Mat& mat) {
  const int channels = mat.channels();
  std::string planar(static_cast<std::size_t>(channels) * mat.rows * mat.cols, '\0');
  for (int c = 0; c < channels; ++c) {
    for (int h = 0; h < mat.rows; ++h) {
      const std::uint8_t* row = mat.ptr<std::uint8_t>(h);
      for (int w = 0; w < mat.cols; ++w) {
        planar[(static_cast<std::size_t>(c) * mat.rows + h) * mat.cols + w] =
            static_cast<char>(row[w * channels + c]);
      }
    }
  }
  return planar;
}

inline std::string file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

inline std::string record_key(std::size_t index, const std::string& path) {
  char number[32];
  std::snprintf(number, sizeof number, "%08zu_", index);
  return number + path;
}

struct StoredRecord {
  std::string key;
  Datum datum;
};

inline std::vector<StoredRecord> read_records(const std::string& db) {
  std::vector<StoredRecord> records;
  auto database = LmdbDatabase::open_for_reading(db);
  for (LmdbCursor cursor(database); cursor.valid(); cursor.next()) {
    StoredRecord record;
    record.key = std::string(cursor.key());
    EXPECT_TRUE(record.datum.ParseFromArray(cursor.value().data(),
                                            static_cast<int>(cursor.value().size())));
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace xtrain::testing

// IDX files, the format of MNIST and Fashion-MNIST (gzipped or not).
//
// Layout (all integers big-endian uint32):
//   images: magic 2051 (0x00000803), count, rows, cols, then count*rows*cols
//           uint8 pixels, image by image, row by row;
//   labels: magic 2049 (0x00000801), count, then count uint8 labels.
// Files are read through zlib's gzopen, which reads plain files unchanged,
// so "train-images-idx3-ubyte" and "train-images-idx3-ubyte.gz" both work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

constexpr std::uint32_t kIdxImagesMagic = 2051;
constexpr std::uint32_t kIdxLabelsMagic = 2049;

struct XTRAIN_API IdxImages {
  std::size_t count = 0;
  int rows = 0;
  int cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols

  const std::uint8_t* image(std::size_t index) const {
    return pixels.data() + index * static_cast<std::size_t>(rows) * cols;
  }
};

// Throw xtrain::Error naming the file if it is missing, has the wrong magic
// number, or is shorter than its header promises.
XTRAIN_API IdxImages read_idx_images(const std::string& path);
XTRAIN_API std::vector<std::uint8_t> read_idx_labels(const std::string& path);

// An images file and its labels file, checked to have the same count.
struct XTRAIN_API IdxDataset {
  IdxImages images;
  std::vector<std::uint8_t> labels;
};
XTRAIN_API IdxDataset read_idx_dataset(const std::string& images_path,
                                       const std::string& labels_path);

}  // namespace xtrain

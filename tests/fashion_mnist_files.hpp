// Where the tests find Fashion-MNIST (Debian's dataset-fashion-mnist, which
// scripts/install_deps.sh installs), and why they skip without it.
//
// XTRAIN_FASHION_MNIST_DIR points them at another folder holding the four
// files under their usual names (the GPU bundle's slice, scripts/gpu_check.sh).
// A missing data set skips a test, also under XTRAIN_REQUIRE_GPU=1: it says
// nothing about the GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "xtrain/datum_io.hpp"
#include "xtrain/idx_file.hpp"
#include "xtrain/lmdb_database.hpp"

namespace xtrain::testing {

inline std::string fashion_mnist_dir() {
  const char* dir = std::getenv("XTRAIN_FASHION_MNIST_DIR");
  return dir != nullptr && *dir != '\0' ? dir : "/usr/share/datasets/fashion-mnist";
}

// Empty when the four files are there; else which one is missing and what to do.
inline std::string fashion_mnist_missing_reason() {
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::string path = fashion_mnist_dir() + "/" + name;
    if (!std::filesystem::exists(path)) {
      return "Fashion-MNIST is missing (no " + path +
             "): apt-get install dataset-fashion-mnist, or set XTRAIN_FASHION_MNIST_DIR";
    }
  }
  return "";
}

// The first `count` images of a split ("train" or "t10k") as an LMDB in
// Caffe's format (keys %08d, one Datum each).
inline void write_fashion_mnist_subset(const std::string& prefix, std::size_t count,
                                       const std::string& db_path) {
  const IdxDataset dataset =
      read_idx_dataset(fashion_mnist_dir() + "/" + prefix + "-images-idx3-ubyte.gz",
                       fashion_mnist_dir() + "/" + prefix + "-labels-idx1-ubyte.gz");
  LmdbWriter writer(LmdbDatabase::open_for_writing(db_path));
  const DatumShape shape{1, dataset.images.rows, dataset.images.cols};
  for (std::size_t i = 0; i < count; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
    writer.put(key,
               make_datum(shape, dataset.images.image(i), dataset.labels[i]).SerializeAsString());
  }
  writer.commit();
}

}  // namespace xtrain::testing

// In a test body or SetUp(): skips the test when Fashion-MNIST is missing.
#define XTRAIN_SKIP_WITHOUT_FASHION_MNIST()                                               \
  do {                                                                                    \
    const std::string xtrain_missing = ::xtrain::testing::fashion_mnist_missing_reason(); \
    if (!xtrain_missing.empty()) GTEST_SKIP() << xtrain_missing;                          \
  } while (false)

// Where the tests find Fashion-MNIST (Debian's dataset-fashion-mnist, which
// scripts/install_deps.sh installs), and why they skip without it.
//
// XTRAIN_FASHION_MNIST_DIR points them at another folder holding the four
// files under their usual names (the GPU bundle's slice, scripts/gpu_check.sh).
// A missing data set skips a test, also under XTRAIN_REQUIRE_GPU=1: it says
// nothing about the GPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

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

}  // namespace xtrain::testing

// In a test body or SetUp(): skips the test when Fashion-MNIST is missing.
#define XTRAIN_SKIP_WITHOUT_FASHION_MNIST()                                               \
  do {                                                                                    \
    const std::string xtrain_missing = ::xtrain::testing::fashion_mnist_missing_reason(); \
    if (!xtrain_missing.empty()) GTEST_SKIP() << xtrain_missing;                          \
  } while (false)

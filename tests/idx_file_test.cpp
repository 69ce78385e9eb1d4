// IDX reader: hand-written files, plain and gzipped, and the errors for bad
// ones.
#include "xtrain/idx_file.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

void append_big_endian(std::string* bytes, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back(static_cast<char>(value >> shift));
}

std::string idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols,
                       const std::vector<std::uint8_t>& pixels) {
  std::string bytes;
  append_big_endian(&bytes, 2051);
  append_big_endian(&bytes, count);
  append_big_endian(&bytes, rows);
  append_big_endian(&bytes, cols);
  bytes.append(pixels.begin(), pixels.end());
  return bytes;
}

std::string idx_labels(const std::vector<std::uint8_t>& labels) {
  std::string bytes;
  append_big_endian(&bytes, 2049);
  append_big_endian(&bytes, static_cast<std::uint32_t>(labels.size()));
  bytes.append(labels.begin(), labels.end());
  return bytes;
}

std::string write_plain(const TempDir& dir, const std::string& name, const std::string& bytes) {
  std::ofstream(dir.file(name), std::ios::binary) << bytes;
  return dir.file(name);
}

std::string write_gzipped(const TempDir& dir, const std::string& name, const std::string& bytes) {
  gzFile file = gzopen(dir.file(name).c_str(), "wb");
  EXPECT_NE(file, nullptr);
  EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
  return dir.file(name);
}

using testing::error_of;
using testing::expect_error;

// Two 2x3 images with distinct pixels.
const std::vector<std::uint8_t> kPixels = {0, 1, 2, 3, 4, 5, 250, 251, 252, 253, 254, 255};

TEST(IdxFile, ReadsPlainImagesAndLabels) {
  TempDir dir("idx");
  const IdxImages images =
      read_idx_images(write_plain(dir, "images", idx_images(2, 2, 3, kPixels)));
  EXPECT_EQ(images.count, 2u);
  EXPECT_EQ(images.rows, 2);
  EXPECT_EQ(images.cols, 3);
  EXPECT_EQ(images.pixels, kPixels);
  EXPECT_EQ(images.image(1)[0], 250);
  EXPECT_EQ(read_idx_labels(write_plain(dir, "labels", idx_labels({7, 9}))),
            (std::vector<std::uint8_t>{7, 9}));
}

TEST(IdxFile, ReadsGzippedImagesAndLabels) {
  TempDir dir("idx");
  const std::string images_path = write_gzipped(dir, "images.gz", idx_images(2, 2, 3, kPixels));
  const std::string labels_path = write_gzipped(dir, "labels.gz", idx_labels({7, 9}));
  // Really compressed: the file starts with gzip's magic bytes.
  std::ifstream raw(images_path, std::ios::binary);
  EXPECT_EQ(raw.get(), 0x1f);
  EXPECT_EQ(raw.get(), 0x8b);

  const IdxDataset dataset = read_idx_dataset(images_path, labels_path);
  EXPECT_EQ(dataset.images.count, 2u);
  EXPECT_EQ(dataset.images.pixels, kPixels);
  EXPECT_EQ(dataset.labels, (std::vector<std::uint8_t>{7, 9}));
}

TEST(IdxFile, WrongMagicNamesFileAndKind) {
  TempDir dir("idx");
  const std::string labels = write_plain(dir, "labels", idx_labels({1}));
  const std::string message = error_of([&] { read_idx_images(labels); });
  EXPECT_NE(message.find("'" + labels + "' is not an IDX images file"), std::string::npos)
      << message;
  EXPECT_NE(message.find("2049"), std::string::npos) << message;
  EXPECT_NE(message.find("an IDX labels file"), std::string::npos) << message;

  const std::string junk = write_plain(dir, "junk", "hello world, not IDX");
  expect_error([&] { read_idx_labels(junk); }, {"is not an IDX labels file"});
}

TEST(IdxFile, TruncatedFilesAreReported) {
  TempDir dir("idx");
  // The header promises 3 images but the file holds 2.
  const std::string short_images = write_gzipped(dir, "short.gz", idx_images(3, 2, 3, kPixels));
  std::string message = error_of([&] { read_idx_images(short_images); });
  EXPECT_NE(message.find("'" + short_images + "' is truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("18 bytes of pixels"), std::string::npos) << message;

  // A header cut off in the middle.
  const std::string cut = write_plain(dir, "cut", idx_images(2, 2, 3, {}).substr(0, 10));
  message = error_of([&] { read_idx_images(cut); });
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;

  // A corrupt header promising terabytes fails cleanly, without allocating them.
  const std::string huge = write_plain(dir, "huge", idx_images(0xffffffffu, 40000, 40000, kPixels));
  message = error_of([&] { read_idx_images(huge); });
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST(IdxFile, ZeroSizedImagesAreRejected) {
  TempDir dir("idx");
  const std::string path = write_plain(dir, "images", idx_images(1, 0, 3, {}));
  expect_error([&] { read_idx_images(path); }, {"header is corrupt"});
}

TEST(IdxFile, MissingFileIsNamed) {
  TempDir dir("idx");
  const std::string message = error_of([&] { read_idx_labels(dir.file("nope")); });
  EXPECT_NE(message.find("cannot open IDX file '" + dir.file("nope") + "'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("No such file or directory"), std::string::npos) << message;
}

TEST(IdxFile, ImageAndLabelCountsMustMatch) {
  TempDir dir("idx");
  const std::string images = write_plain(dir, "images", idx_images(2, 2, 3, kPixels));
  const std::string labels = write_plain(dir, "labels", idx_labels({1, 2, 3}));
  const std::string message = error_of([&] { read_idx_dataset(images, labels); });
  EXPECT_NE(message.find("holds 2 images"), std::string::npos) << message;
  EXPECT_NE(message.find("holds 3 labels"), std::string::npos) << message;
}

}  // namespace
}  // namespace xtrain

// convert_mnist_data, run as a user would: hand-written IDX files in, an LMDB
// of Caffe Datum records out.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/datum_io.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {
namespace {

using namespace testing;

void append_big_endian(std::string* bytes, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes->push_back(static_cast<char>(value >> shift));
}

// count images of rows x cols whose pixel j of image i is (i * 7 + j) mod 256.
std::uint8_t pixel(int image, int index) {
  return static_cast<std::uint8_t>((image * 7 + index) & 0xff);
}

std::string images_file(int count, int rows, int cols) {
  std::string bytes;
  append_big_endian(&bytes, 2051);
  append_big_endian(&bytes, count);
  append_big_endian(&bytes, rows);
  append_big_endian(&bytes, cols);
  for (int i = 0; i < count; ++i) {
    for (int j = 0; j < rows * cols; ++j) bytes.push_back(static_cast<char>(pixel(i, j)));
  }
  return bytes;
}

std::uint8_t label(int image) { return static_cast<std::uint8_t>(image % 10); }

std::string labels_file(int count) {
  std::string bytes;
  append_big_endian(&bytes, 2049);
  append_big_endian(&bytes, count);
  for (int i = 0; i < count; ++i) bytes.push_back(static_cast<char>(label(i)));
  return bytes;
}

void write_gzipped(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
}

std::string convert_command(const std::string& images, const std::string& labels,
                            const std::string& db, const std::string& flags = "") {
  return "'" + tool_path("convert_mnist_data") + "' " + flags + " '" + images + "' '" + labels +
         "' '" + db + "'";
}

// Reads the DB back and checks every record: key, shape, pixels, label.
void expect_converted(const std::string& db, int count, int rows, int cols) {
  auto database = LmdbDatabase::open_for_reading(db);
  ASSERT_EQ(database->num_records(), static_cast<std::size_t>(count));
  LmdbCursor cursor(database);
  Datum datum;
  for (int i = 0; i < count; ++i, cursor.next()) {
    ASSERT_TRUE(cursor.valid());
    char key[16];
    std::snprintf(key, sizeof key, "%08d", i);
    ASSERT_EQ(cursor.key(), key);
    ASSERT_TRUE(
        datum.ParseFromArray(cursor.value().data(), static_cast<int>(cursor.value().size())));
    EXPECT_EQ(datum.channels(), 1);
    EXPECT_EQ(datum.height(), rows);
    EXPECT_EQ(datum.width(), cols);
    EXPECT_EQ(datum.label(), label(i));
    EXPECT_FALSE(datum.has_encoded());
    EXPECT_EQ(datum.float_data_size(), 0);
    ASSERT_EQ(datum.data().size(), static_cast<std::size_t>(rows * cols));
    for (int j = 0; j < rows * cols; ++j) {
      ASSERT_EQ(static_cast<std::uint8_t>(datum.data()[j]), pixel(i, j)) << "image " << i;
    }
  }
  EXPECT_FALSE(cursor.valid());
}

TEST(ConvertMnistData, ConvertsPlainFiles) {
  TempDir dir("convert_mnist");
  std::ofstream(dir.file("images"), std::ios::binary) << images_file(5, 3, 4);
  std::ofstream(dir.file("labels"), std::ios::binary) << labels_file(5);
  const auto result =
      run_tool(convert_command(dir.file("images"), dir.file("labels"), dir.file("db")));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("wrote 5 records"), std::string::npos) << result.output;
  EXPECT_TRUE(std::filesystem::exists(dir.file("db/data.mdb")));
  expect_converted(dir.file("db"), 5, 3, 4);
}

TEST(ConvertMnistData, ConvertsGzippedFilesAcrossTransactions) {
  TempDir dir("convert_mnist");
  write_gzipped(dir.file("images.gz"), images_file(2345, 2, 2));
  write_gzipped(dir.file("labels.gz"), labels_file(2345));
  const auto result = run_tool(convert_command(dir.file("images.gz"), dir.file("labels.gz"),
                                               dir.file("db"), "--backend=lmdb"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("wrote 2345 records of 1x2x2 pixels"), std::string::npos)
      << result.output;
  expect_converted(dir.file("db"), 2345, 2, 2);
}

TEST(ConvertMnistData, RefusesToOverwriteAnExistingDb) {
  TempDir dir("convert_mnist");
  std::ofstream(dir.file("images"), std::ios::binary) << images_file(2, 2, 2);
  std::ofstream(dir.file("labels"), std::ios::binary) << labels_file(2);
  const std::string command =
      convert_command(dir.file("images"), dir.file("labels"), dir.file("db"));
  ASSERT_EQ(run_tool(command).exit_code, 0);
  const auto again = run_tool(command);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(testing::last_line(again.output), "convert_mnist_data: error: '" + dir.file("db") +
                                                  "' already exists; delete it first (rm -r " +
                                                  dir.file("db") + ") or choose another DB path");
  expect_converted(dir.file("db"), 2, 2, 2);  // untouched
}

TEST(ConvertMnistData, BadInputFailsWithOneLineAndLeavesNoDb) {
  TempDir dir("convert_mnist");
  std::ofstream(dir.file("images"), std::ios::binary) << images_file(3, 2, 2);
  std::ofstream(dir.file("labels"), std::ios::binary) << labels_file(4);
  auto result = run_tool(convert_command(dir.file("images"), dir.file("labels"), dir.file("db")));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.output.rfind("convert_mnist_data: error: ", 0), 0u) << result.output;
  EXPECT_NE(result.output.find("holds 3 images"), std::string::npos) << result.output;
  EXPECT_FALSE(std::filesystem::exists(dir.file("db")));

  // Swapped arguments.
  result = run_tool(convert_command(dir.file("labels"), dir.file("images"), dir.file("db")));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("is not an IDX images file"), std::string::npos) << result.output;

  result = run_tool(
      convert_command(dir.file("images"), dir.file("labels"), dir.file("db"), "--backend=leveldb"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("LevelDB is not supported"), std::string::npos) << result.output;
}

TEST(ConvertMnistData, WrongArgumentCountPrintsUsage) {
  const auto result = run_tool("'" + tool_path("convert_mnist_data") + "' only_one_arg");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("convert_mnist_data [FLAGS] IMAGES LABELS DB"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("-backend"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace xtrain

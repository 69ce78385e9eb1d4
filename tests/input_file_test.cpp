// Opening the files a user names: what is wrong with a path is said at once.
#include "xtrain/input_file.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>

#include "layer_test_support.hpp"
#include "tool_runner.hpp"

namespace xtrain {
namespace {

TEST(InputFile, ReadsAFileWhole) {
  testing::TempDir dir("input_file");
  const std::string path = dir.write("a.txt", std::string("one two\0three", 13));
  EXPECT_EQ(read_input_file(path, "the list"), std::string("one two\0three", 13));
  std::ifstream stream = open_input_file(path, "the list");
  std::string word;
  stream >> word;
  EXPECT_EQ(word, "one");
}

TEST(InputFile, MissingFileNamesWhatWasExpected) {
  testing::TempDir dir("input_file_missing");
  const std::string message =
      testing::error_of([&] { read_input_file(dir.file("nope.txt"), "the labels file"); });
  EXPECT_EQ(message, "cannot open the labels file '" + dir.file("nope.txt") +
                         "': No such file or directory");
}

TEST(InputFile, DirectoryIsNotAFile) {
  testing::TempDir dir("input_file_dir");
  for (const std::string& what : {std::string("the image list"), std::string()}) {
    const std::string message = testing::error_of([&] { open_input_file(dir.path(), what); });
    const std::string named = what.empty() ? "'" + dir.path() + "'" : what + " '" + dir.path() + "'";
    EXPECT_EQ(message, named + " is a directory, not a file; give the file's path");
  }
}

// --weights=/dev/zero was read until memory ran out.
TEST(InputFile, ADeviceIsNotAFile) {
  EXPECT_EQ(testing::error_of([] { read_input_file("/dev/zero", "the weights"); }),
            "the weights '/dev/zero' is a device, not a file; give the file's path");
}

// Nothing read whole may pass protobuf's 2 GB; a (sparse) 3 GB file is
// refused by its size, before a byte is read.
TEST(InputFile, AFileOverTwoGigabytesIsRefusedBeforeReading) {
  testing::TempDir dir("input_file_large");
  const std::string path = dir.write("big.caffemodel", "");
  std::filesystem::resize_file(path, std::uintmax_t{3} << 30);
  EXPECT_EQ(testing::error_of([&] { read_input_file(path, "the weights"); }),
            "the weights '" + path +
                "' is larger than 2 GB, more than any file xtrain reads whole (a .caffemodel or "
                "ONNX model is at most 2 GB): is it the right file?");
}

TEST(InputFile, EmptyPathSaysNoneWasGiven) {
  EXPECT_EQ(testing::error_of([] { check_input_file("", "the weights"); }),
            "no path given for the weights");
}

}  // namespace
}  // namespace xtrain

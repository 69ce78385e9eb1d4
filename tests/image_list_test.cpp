// Image list files: Caffe's "PATH LABEL" split at the last space, with
// malformed lines reported by line number, and the deterministic shuffle.
#include "xtrain/image_list.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

ImageList parse(const std::string& text) {
  std::istringstream input(text);
  return parse_image_list(input, "train.txt");
}

TEST(ImageList, SplitsAtTheLastSpace) {
  const ImageList list = parse(
      "a.jpg 0\n"
      "my photos/cat 1.jpg 3\n"
      "\n"
      "neg.png -2\n"
      "windows.png 4\r\n"
      "two  spaces.png 5\n"
      "   \n"
      "last.png 2147483647");  // no final newline
  ASSERT_EQ(list.entries.size(), 6u);
  EXPECT_TRUE(list.malformed.empty());
  const std::vector<std::string> paths = {"a.jpg",       "my photos/cat 1.jpg", "neg.png",
                                          "windows.png", "two  spaces.png",     "last.png"};
  const std::vector<int> labels = {0, 3, -2, 4, 5, 2147483647};
  const std::vector<int> lines = {1, 2, 4, 5, 6, 8};
  for (std::size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(list.entries[i].path, paths[i]);
    EXPECT_EQ(list.entries[i].label, labels[i]);
    EXPECT_EQ(list.entries[i].line_number, lines[i]);
  }
  EXPECT_EQ(list.where(17), "list 'train.txt' line 17");
}

TEST(ImageList, ReportsMalformedLinesWithTheirNumbers) {
  const ImageList list = parse(
      "good.jpg 1\n"
      "nolabel.jpg\n"
      "cat.jpg dog\n"
      "half.jpg 3.5\n"
      " 4\n"
      "trailing.jpg 1 \n"
      "huge.jpg 99999999999\n"
      "plus.jpg +1\n"
      "\n"
      "fine.jpg 2\n");
  ASSERT_EQ(list.entries.size(), 2u);
  EXPECT_EQ(list.entries[0].line_number, 1);
  EXPECT_EQ(list.entries[1].line_number, 10);
  ASSERT_EQ(list.malformed.size(), 7u);
  const std::vector<int> lines = {2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::string> reasons = {
      "no space between path and label", "label 'dog' is not an integer",
      "label '3.5' is not an integer",   "empty path before the label",
      "no label after the last space",   "label '99999999999' is out of the int range",
      "label '+1' is not an integer"};
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(list.malformed[i].line_number, lines[i]);
    EXPECT_EQ(list.malformed[i].reason.rfind(reasons[i], 0), 0u) << list.malformed[i].reason;
  }
  EXPECT_EQ(list.malformed[0].text, "nolabel.jpg");
}

TEST(ImageList, ReadsFilesAndNamesAMissingOne) {
  testing::TempDir dir("image_list");
  const std::string path = dir.write("list.txt", "x.png 1\ny.png 2\n");
  const ImageList list = read_image_list(path);
  EXPECT_EQ(list.source, path);
  ASSERT_EQ(list.entries.size(), 2u);
  EXPECT_EQ(list.entries[1].path, "y.png");
  try {
    read_image_list(dir.file("missing.txt"));
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what())
                  .find("cannot open the image list '" + dir.file("missing.txt") + "'"),
              std::string::npos);
  }
}

std::vector<ImageListEntry> numbered(int count) {
  std::vector<ImageListEntry> entries;
  for (int i = 0; i < count; ++i) entries.push_back({std::to_string(i), i, i + 1});
  return entries;
}

std::vector<int> labels(const std::vector<ImageListEntry>& entries) {
  std::vector<int> result;
  for (const auto& entry : entries) result.push_back(entry.label);
  return result;
}

TEST(ImageList, ShuffleIsADeterministicPermutation) {
  auto first = numbered(100);
  auto second = numbered(100);
  auto other_seed = numbered(100);
  shuffle_image_list(&first, 0);
  shuffle_image_list(&second, 0);
  shuffle_image_list(&other_seed, 1);
  EXPECT_EQ(labels(first), labels(second));
  EXPECT_NE(labels(first), labels(other_seed));
  EXPECT_NE(labels(first), labels(numbered(100)));
  std::vector<int> sorted = labels(first);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, labels(numbered(100)));
  for (const auto& entry : first) EXPECT_EQ(entry.line_number, entry.label + 1);  // moved whole

  // Every position is reachable: over many seeds each element lands first.
  std::set<int> first_labels;
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    auto entries = numbered(5);
    shuffle_image_list(&entries, seed);
    first_labels.insert(entries[0].label);
  }
  EXPECT_EQ(first_labels.size(), 5u);

  std::vector<ImageListEntry> empty;
  shuffle_image_list(&empty, 3);
  auto one = numbered(1);
  shuffle_image_list(&one, 3);
  EXPECT_EQ(one[0].label, 0);
}

}  // namespace
}  // namespace xtrain

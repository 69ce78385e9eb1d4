// idx_to_images on the real Fashion-MNIST files: class folders of PNGs
// holding exactly the IDX pixels, and a list convert_imageset reads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "image_fixtures.hpp"
#include "tool_runner.hpp"
#include "xtrain/image_list.hpp"

namespace xtrain {
namespace {

using namespace testing;

const char* kClasses = "tshirt_top,trouser,pullover,dress,coat,sandal,shirt,sneaker,bag,ankle_boot";

ToolResult export_images(const std::string& output, const std::string& flags) {
  const std::string dir = testing::fashion_mnist_dir();
  return run_tool("'" + tool_path("idx_to_images") + "' " + flags + " '" + dir +
                  "/t10k-images-idx3-ubyte.gz' '" + dir + "/t10k-labels-idx1-ubyte.gz' '" + output +
                  "'");
}

TEST(IdxToImages, WritesClassFoldersOfExactPngsAndAList) {
  XTRAIN_SKIP_WITHOUT_FASHION_MNIST();
  TempDir dir("idx_to_images");
  const ToolResult result =
      export_images(dir.file("out"), std::string("--count=30 --class_names=") + kClasses);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(testing::last_line(result.output),
            "idx_to_images: wrote 30 png images of 28x28 and the list '" + dir.file("out") +
                "/list.txt'");

  const IdxDataset fashion = testing::fashion_mnist_test_set(30);
  const ImageList list = read_image_list(dir.file("out/list.txt"));
  ASSERT_EQ(list.entries.size(), 30u);
  EXPECT_TRUE(list.malformed.empty());
  const std::vector<std::string> classes = {"tshirt_top", "trouser",   "pullover", "dress",
                                            "coat",       "sandal",    "shirt",    "sneaker",
                                            "bag",        "ankle_boot"};
  for (std::size_t i = 0; i < 30; ++i) {
    const ImageListEntry& entry = list.entries[i];
    char name[16];
    std::snprintf(name, sizeof name, "%05zu.png", i);
    EXPECT_EQ(entry.label, fashion.labels[i]);
    EXPECT_EQ(entry.path, classes[entry.label] + "/" + name);
    const cv::Mat image = cv::imread(dir.file("out/" + entry.path), cv::IMREAD_UNCHANGED);
    ASSERT_EQ(image.type(), CV_8UC1) << entry.path;
    ASSERT_EQ(testing::planar_bytes(image),
              std::string(reinterpret_cast<const char*>(fashion.images.image(i)), 28 * 28));
  }

  // The list goes straight into convert_imageset.
  const ToolResult converted =
      run_tool("'" + tool_path("convert_imageset") + "' --gray '" + dir.file("out") + "/' '" +
               dir.file("out/list.txt") + "' '" + dir.file("db") + "'");
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  const auto records = testing::read_records(dir.file("db"));
  ASSERT_EQ(records.size(), 30u);
  EXPECT_EQ(records[29].datum.data(),
            std::string(reinterpret_cast<const char*>(fashion.images.image(29)), 28 * 28));

  // Label numbers as folders without --class_names; an existing list is kept.
  const ToolResult numbered = export_images(dir.file("numbered"), "--count=3 --format=bmp");
  ASSERT_EQ(numbered.exit_code, 0) << numbered.output;
  EXPECT_TRUE(std::filesystem::exists(
      dir.file("numbered/" + std::to_string(fashion.labels[2]) + "/00002.bmp")));
  const ToolResult again = export_images(dir.file("numbered"), "--count=3");
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.output.find("list.txt' already exists"), std::string::npos) << again.output;
}

TEST(IdxToImages, RefusesBadFlags) {
  XTRAIN_SKIP_WITHOUT_FASHION_MNIST();
  TempDir dir("idx_to_images");
  ToolResult result = export_images(dir.file("out"), "--class_names=a,b/c");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("'b/c' cannot be a folder name"), std::string::npos)
      << result.output;
  result = export_images(dir.file("out"), "--count=5 --class_names=one,two");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("--class_names names only 2 classes"), std::string::npos)
      << result.output;
  result = export_images(dir.file("out"), "--format=docx");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.output.find("OpenCV cannot write that format"), std::string::npos)
      << result.output;
}

}  // namespace
}  // namespace xtrain

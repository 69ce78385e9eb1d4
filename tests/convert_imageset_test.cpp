// convert_imageset, run as a user would on real files: Fashion-MNIST digits
// written as PNGs and colour JPEGs in folders with a list file. The LMDB it
// writes is read back and every record checked against what OpenCV decodes
// from the same files (and against the original IDX bytes for the PNGs).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "image_fixtures.hpp"
#include "tool_runner.hpp"

namespace xtrain {
namespace {

using namespace testing;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ConvertImageset : public ::testing::Test {
 protected:
  // Most cases list Fashion-MNIST images: without the data set the suite skips.
  static void SetUpTestSuite() {
    if (!testing::fashion_mnist_missing_reason().empty()) return;
    images_ = std::make_unique<TempDir>("imageset_files");
    fashion_ = std::make_unique<IdxDataset>(testing::fashion_mnist_test_set(200));
    fashion_list_ = testing::write_fashion_pngs(images_->path(), *fashion_);
    colour_list_ = testing::write_colour_jpegs(
        images_->path(), {{31, 17}, {64, 48}, {100, 75}, {8, 8}, {57, 33}, {64, 48}});
  }
  static void TearDownTestSuite() {
    images_.reset();
    fashion_.reset();
  }
  void SetUp() override { XTRAIN_SKIP_WITHOUT_FASHION_MNIST(); }

  // Runs convert_imageset on `list` (written to a file) into work_/<db>.
  ToolResult convert(const std::vector<ListedImage>& list, const std::string& db,
                     const std::string& flags = "", const std::string& root = "") {
    const std::string list_path = work_.write(db + ".txt", list_text(list));
    return convert_list(list_path, db, flags, root);
  }
  ToolResult convert_list(const std::string& list_path, const std::string& db,
                          const std::string& flags = "", const std::string& root = "") {
    const std::string root_folder = root.empty() ? images_->path() + "/" : root;
    return run_tool("'" + tool_path("convert_imageset") + "' " + flags + " '" + root_folder +
                    "' '" + list_path + "' '" + work_.file(db) + "'");
  }
  static std::string image_file(const ListedImage& image) {
    return images_->path() + "/" + image.path;
  }
  std::string summary(int written, int unreadable, int malformed, int wrong_size) {
    return "convert_imageset: wrote " + std::to_string(written) + " records; skipped " +
           std::to_string(unreadable + malformed + wrong_size) + ": " + std::to_string(unreadable) +
           " unreadable images, " + std::to_string(malformed) + " malformed lines, " +
           std::to_string(wrong_size) + " wrong size";
  }

  // Every record of `db` is image i of `list` under key "%08d_path", with
  // the pixels `expected(image)` planar in channels x height x width.
  template <typename Expected>
  void expect_records(const std::string& db, const std::vector<ListedImage>& list,
                      Expected expected) {
    const std::vector<StoredRecord> records = read_records(work_.file(db));
    ASSERT_EQ(records.size(), list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      SCOPED_TRACE(list[i].path);
      const Datum& datum = records[i].datum;
      EXPECT_EQ(records[i].key, record_key(i, list[i].path));
      EXPECT_EQ(datum.label(), list[i].label);
      EXPECT_FALSE(datum.encoded());
      const cv::Mat pixels = expected(list[i]);
      EXPECT_EQ(datum.channels(), pixels.channels());
      EXPECT_EQ(datum.height(), pixels.rows);
      EXPECT_EQ(datum.width(), pixels.cols);
      ASSERT_EQ(datum.data(), planar_bytes(pixels));
    }
  }

  static std::unique_ptr<TempDir> images_;
  static std::unique_ptr<IdxDataset> fashion_;
  static std::vector<ListedImage> fashion_list_;
  static std::vector<ListedImage> colour_list_;
  TempDir work_{"imageset"};
};

std::unique_ptr<TempDir> ConvertImageset::images_;
std::unique_ptr<IdxDataset> ConvertImageset::fashion_;
std::vector<ListedImage> ConvertImageset::fashion_list_;
std::vector<ListedImage> ConvertImageset::colour_list_;

TEST_F(ConvertImageset, FashionMnistPngsRoundTripToTheIdxBytes) {
  const ToolResult result = convert(fashion_list_, "grey_db", "--gray");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(testing::last_line(result.output), summary(200, 0, 0, 0));
  EXPECT_TRUE(contains(result.output, "A total of 200 images")) << result.output;
  const std::vector<StoredRecord> records = read_records(work_.file("grey_db"));
  ASSERT_EQ(records.size(), 200u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Datum& datum = records[i].datum;
    ASSERT_EQ(records[i].key, record_key(i, fashion_list_[i].path));
    ASSERT_EQ(datum.label(), fashion_->labels[i]);
    ASSERT_EQ(datum.channels(), 1);
    ASSERT_EQ(datum.height(), 28);
    ASSERT_EQ(datum.width(), 28);
    ASSERT_EQ(datum.data(),
              std::string(reinterpret_cast<const char*>(fashion_->images.image(i)), 28 * 28))
        << "image " << i;
  }

  // Without --gray: three equal planes, as OpenCV's IMREAD_COLOR gives.
  ASSERT_EQ(convert(fashion_list_, "colour_db").exit_code, 0);
  const std::vector<StoredRecord> colour = read_records(work_.file("colour_db"));
  ASSERT_EQ(colour.size(), 200u);
  for (std::size_t i = 0; i < colour.size(); i += 17) {
    const std::string grey(reinterpret_cast<const char*>(fashion_->images.image(i)), 28 * 28);
    EXPECT_EQ(colour[i].datum.channels(), 3);
    EXPECT_EQ(colour[i].datum.data(), grey + grey + grey);
  }
}

TEST_F(ConvertImageset, ColourJpegsMatchOpenCvExactly) {
  ToolResult result = convert(colour_list_, "db");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_records("db", colour_list_, [](const ListedImage& image) {
    return cv::imread(image_file(image), cv::IMREAD_COLOR);
  });

  result = convert(colour_list_, "resized_db", "--resize_height=30 --resize_width=40");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_records("resized_db", colour_list_, [](const ListedImage& image) {
    cv::Mat resized;
    cv::resize(cv::imread(image_file(image), cv::IMREAD_COLOR), resized, cv::Size(40, 30));
    return resized;
  });

  result = convert(colour_list_, "grey_db", "--gray");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_records("grey_db", colour_list_, [](const ListedImage& image) {
    return cv::imread(image_file(image), cv::IMREAD_GRAYSCALE);
  });
}

TEST_F(ConvertImageset, EncodedStoresTheFileBytesOrReencodes) {
  ToolResult result = convert(colour_list_, "encoded_db", "--encoded");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::vector<StoredRecord> records = read_records(work_.file("encoded_db"));
  ASSERT_EQ(records.size(), colour_list_.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Datum& datum = records[i].datum;
    EXPECT_EQ(records[i].key, record_key(i, colour_list_[i].path));
    EXPECT_TRUE(datum.encoded());
    EXPECT_EQ(datum.label(), colour_list_[i].label);
    EXPECT_EQ(datum.data(), file_bytes(image_file(colour_list_[i])));
    const cv::Mat raw(1, static_cast<int>(datum.data().size()), CV_8UC1,
                      const_cast<char*>(datum.data().data()));
    EXPECT_EQ(planar_bytes(cv::imdecode(raw, cv::IMREAD_COLOR)),
              planar_bytes(cv::imread(image_file(colour_list_[i]), cv::IMREAD_COLOR)));
  }

  // PNG is lossless: the re-encoded JPEGs decode to exactly OpenCV's pixels.
  result = convert(colour_list_, "png_db", "--encoded --encode_type=png");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  records = read_records(work_.file("png_db"));
  ASSERT_EQ(records.size(), colour_list_.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string& data = records[i].datum.data();
    EXPECT_TRUE(records[i].datum.encoded());
    EXPECT_EQ(data.substr(1, 3), "PNG");
    const cv::Mat raw(1, static_cast<int>(data.size()), CV_8UC1, const_cast<char*>(data.data()));
    EXPECT_EQ(planar_bytes(cv::imdecode(raw, cv::IMREAD_UNCHANGED)),
              planar_bytes(cv::imread(image_file(colour_list_[i]), cv::IMREAD_COLOR)));
  }

  // Resized PNGs are re-encoded as PNG (their extension), again exactly.
  const std::vector<ListedImage> some(fashion_list_.begin(), fashion_list_.begin() + 20);
  result = convert(some, "resized_png_db", "--encoded --resize_height=14 --resize_width=21");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  records = read_records(work_.file("resized_png_db"));
  ASSERT_EQ(records.size(), some.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const std::string& data = records[i].datum.data();
    const cv::Mat raw(1, static_cast<int>(data.size()), CV_8UC1, const_cast<char*>(data.data()));
    cv::Mat expected;
    cv::resize(cv::imread(image_file(some[i]), cv::IMREAD_COLOR), expected, cv::Size(21, 14));
    EXPECT_EQ(planar_bytes(cv::imdecode(raw, cv::IMREAD_UNCHANGED)), planar_bytes(expected));
  }

  // --encode_type alone turns encoding on, as in Caffe.
  result = convert(some, "type_only_db", "--encode_type=png");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  records = read_records(work_.file("type_only_db"));
  ASSERT_EQ(records.size(), some.size());
  EXPECT_TRUE(records[0].datum.encoded());
  EXPECT_EQ(records[0].datum.data(), file_bytes(image_file(some[0])));
}

TEST_F(ConvertImageset, ShuffleIsDeterministicAndKeepsEveryRecord) {
  const std::vector<ListedImage> list(fashion_list_.begin(), fashion_list_.begin() + 60);
  ASSERT_EQ(convert(list, "plain_db", "--gray").exit_code, 0);
  ASSERT_EQ(convert(list, "shuffled_db", "--gray --shuffle").exit_code, 0);
  ASSERT_EQ(convert(list, "again_db", "--gray --shuffle --seed=0").exit_code, 0);
  ASSERT_EQ(convert(list, "seed5_db", "--gray --shuffle --seed=5").exit_code, 0);
  const auto plain = read_records(work_.file("plain_db"));
  const auto shuffled = read_records(work_.file("shuffled_db"));
  const auto again = read_records(work_.file("again_db"));
  const auto seed5 = read_records(work_.file("seed5_db"));
  ASSERT_EQ(shuffled.size(), 60u);
  ASSERT_EQ(again.size(), 60u);

  std::map<std::string, std::string> by_path;  // path -> serialized Datum
  for (std::size_t i = 0; i < plain.size(); ++i) {
    by_path[list[i].path] = plain[i].datum.SerializeAsString();
  }
  std::vector<std::string> order;
  std::vector<std::string> order5;
  for (std::size_t i = 0; i < shuffled.size(); ++i) {
    // Keys are "%08d_" of the shuffled index, then the path as listed.
    const std::string& key = shuffled[i].key;
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "%08zu_", i);
    ASSERT_EQ(key.substr(0, 9), prefix);
    const std::string path = key.substr(9);
    ASSERT_EQ(by_path.count(path), 1u) << key;
    EXPECT_EQ(shuffled[i].datum.SerializeAsString(), by_path[path]);
    order.push_back(path);
    EXPECT_EQ(again[i].key, key);
    EXPECT_EQ(again[i].datum.SerializeAsString(), shuffled[i].datum.SerializeAsString());
    order5.push_back(seed5[i].key.substr(9));
  }
  std::vector<std::string> listed;
  for (const auto& image : list) listed.push_back(image.path);
  EXPECT_NE(order, listed);
  EXPECT_NE(order5, order);
  std::sort(order.begin(), order.end());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(order, listed);
}

TEST_F(ConvertImageset, ThreadCountDoesNotChangeTheDatabase) {
  std::vector<ListedImage> list(fashion_list_.begin(), fashion_list_.begin() + 50);
  list.insert(list.end(), colour_list_.begin(), colour_list_.end());
  const ToolResult one =
      convert(list, "one_db", "--threads=1 --resize_height=20 --resize_width=24");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const ToolResult four = convert(list, "four_db",
                                  "--threads=4 --resize_height=20 --resize_width=24 "
                                  "--progress_seconds=0");
  ASSERT_EQ(four.exit_code, 0) << four.output;
  EXPECT_TRUE(contains(four.output, "decoding on 4 threads")) << four.output;
  EXPECT_TRUE(contains(four.output, "Processed 56/56 images (100.0%)")) << four.output;
  EXPECT_TRUE(contains(four.output, "Processed 1/56 images")) << four.output;
  EXPECT_TRUE(contains(four.output, "ETA ")) << four.output;
  const auto a = read_records(work_.file("one_db"));
  const auto b = read_records(work_.file("four_db"));
  ASSERT_EQ(a.size(), 56u);
  ASSERT_EQ(b.size(), 56u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].datum.SerializeAsString(), b[i].datum.SerializeAsString());
  }
}

// A list with one problem of each kind, and the line each is on.
std::string troubled_list(const std::vector<ListedImage>& fashion,
                          const std::vector<ListedImage>& colour) {
  return fashion[0].path + " 0\n" +  // 1: fine, 3x28x28
         "no_label_here.png\n" +     // 2: malformed
         "\n" +                      // 3: empty, skipped silently
         "missing/none.png 3\n" +    // 4: no such file
         "bad.jpg 1\n" +             // 5: not an image
         colour[0].path + " 2\n" +   // 6: 3x17x31, wrong size
         fashion[1].path + " 4\n";   // 7: fine
}

TEST_F(ConvertImageset, BadLinesAndImagesAreNamedSkippedAndCounted) {
  const std::string root = work_.path() + "/root/";
  std::filesystem::create_directories(root);
  for (const ListedImage& image : {fashion_list_[0], fashion_list_[1], colour_list_[0]}) {
    std::filesystem::create_directories(std::filesystem::path(root + image.path).parent_path());
    std::filesystem::copy_file(image_file(image), root + image.path);
  }
  work_.write("root/bad.jpg", "this is a text file, not a JPEG\n");
  const std::string list = work_.write("list.txt", troubled_list(fashion_list_, colour_list_));
  const std::string where = "list '" + list + "' line ";

  const ToolResult result = convert_list(list, "db", "--check_size", root);
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(testing::last_line(result.output), summary(2, 2, 1, 1)) << result.output;
  EXPECT_TRUE(contains(result.output, where + "2: no space between path and label"))
      << result.output;
  EXPECT_TRUE(contains(result.output, where + "4: cannot open '" + root + "missing/none.png'"))
      << result.output;
  EXPECT_TRUE(contains(result.output, where + "5: '" + root + "bad.jpg' is not an image"))
      << result.output;
  EXPECT_TRUE(contains(result.output, where + "6: '" + colour_list_[0].path +
                                          "' is 3x17x31 (channels x height x width) but the "
                                          "first image ('" +
                                          fashion_list_[0].path + "', line 1) is 3x28x28"))
      << result.output;
  EXPECT_FALSE(contains(result.output, where + "3")) << result.output;
  EXPECT_FALSE(contains(result.output, where + "7")) << result.output;

  // Malformed lines take no index; skipped images keep theirs (as in Caffe).
  const auto records = read_records(work_.file("db"));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].key, record_key(0, fashion_list_[0].path));
  EXPECT_EQ(records[1].key, record_key(4, fashion_list_[1].path));
  EXPECT_EQ(records[1].datum.label(), 4);

  // Without --check_size the odd-sized image is written.
  const ToolResult unchecked = convert_list(list, "unchecked_db", "", root);
  ASSERT_EQ(unchecked.exit_code, 0) << unchecked.output;
  EXPECT_EQ(testing::last_line(unchecked.output), summary(3, 2, 1, 0));
}

TEST_F(ConvertImageset, StrictStopsAtTheFirstProblem) {
  const std::string root = work_.path() + "/root/";
  std::filesystem::create_directories(
      std::filesystem::path(root + fashion_list_[0].path).parent_path());
  std::filesystem::copy_file(image_file(fashion_list_[0]), root + fashion_list_[0].path);
  const std::string list = work_.write("list.txt", troubled_list(fashion_list_, colour_list_));
  ToolResult result = convert_list(list, "db", "--strict", root);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output),
            "convert_imageset: error: list '" + list +
                "' line 2: no space between path and label (write \"PATH LABEL\"): "
                "\"no_label_here.png\" (stopped by --strict)");
  EXPECT_FALSE(std::filesystem::exists(work_.file("db")));

  const std::string images_only =
      work_.write("images.txt", fashion_list_[0].path + " 0\n\nmissing/none.png 3\n");
  result = convert_list(images_only, "db", "--strict", root);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output),
            "convert_imageset: error: list '" + images_only + "' line 3: cannot open '" + root +
                "missing/none.png': No such file or directory (stopped by --strict)");
  EXPECT_FALSE(std::filesystem::exists(work_.file("db")));  // not left half-written
}

TEST_F(ConvertImageset, RefusesBadArgumentsWithOneLine) {
  const std::vector<ListedImage> two(fashion_list_.begin(), fashion_list_.begin() + 2);
  ASSERT_EQ(convert(two, "db").exit_code, 0);
  const auto before = read_records(work_.file("db"));
  ToolResult result = convert(two, "db");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output), "convert_imageset: error: '" + work_.file("db") +
                                                   "' already exists; delete it first (rm -r " +
                                                   work_.file("db") +
                                                   ") or choose another DB path");
  EXPECT_EQ(read_records(work_.file("db")).size(), before.size());  // untouched

  const std::vector<std::pair<std::string, std::string>> refusals = {
      {"--backend=leveldb", "LevelDB is not supported; use --backend=lmdb"},
      {"--resize_width=10", "give both (> 0) to resize, or neither"},
      {"--resize_width=30000 --resize_height=30000",
       "a record of 30000 x 30000 x 3 = 2700000000 bytes is more than the 2 GB a Datum can hold"},
      {"--encode_type=docx", "OpenCV cannot encode that format"},
  };
  for (const auto& [flags, message] : refusals) {
    result = convert(two, "other_db", flags);
    EXPECT_EQ(result.exit_code, 1) << flags;
    EXPECT_EQ(testing::last_line(result.output).rfind("convert_imageset: error: ", 0), 0u)
        << result.output;
    EXPECT_TRUE(contains(result.output, message)) << result.output;
    EXPECT_FALSE(std::filesystem::exists(work_.file("other_db")));
  }

  result = convert_list(work_.file("no_such_list.txt"), "other_db");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.output, "cannot open the image list")) << result.output;

  // Nothing convertible: an error, and no empty DB left behind. The root
  // folder without its '/' is the usual cause, and the message says so.
  result = convert(two, "other_db", "", images_->path());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(testing::last_line(result.output),
                       "convert_imageset: error: no image could be converted (wrote 0 records; "
                       "skipped 2: 2 unreadable images"))
      << result.output;
  EXPECT_TRUE(contains(result.output, "may need a trailing '/'")) << result.output;
  EXPECT_FALSE(std::filesystem::exists(work_.file("other_db")));

  result = run_tool("'" + tool_path("convert_imageset") + "' only_one_arg");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.output, "convert_imageset [FLAGS] ROOTFOLDER/ LISTFILE DB_NAME"))
      << result.output;
  EXPECT_TRUE(contains(result.output, "-check_size")) << result.output;
}

}  // namespace
}  // namespace xtrain

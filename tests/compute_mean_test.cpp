// compute_mean and MeanAccumulator: the mean image against means computed
// by hand in the test, over hand-made records, over real Fashion-MNIST
// PNGs converted by convert_imageset, and over encoded records (which must
// give exactly the mean of the same images stored raw).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/mean_file.hpp"
#include "image_fixtures.hpp"
#include "lmdb_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/mean_accumulator.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using namespace testing;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

ToolResult compute_mean(const std::string& db, const std::string& output = "",
                        const std::string& flags = "") {
  return run_tool("'" + tool_path("compute_mean") + "' " + flags + " '" + db + "'" +
                  (output.empty() ? "" : " '" + output + "'"));
}

BlobProto read_blob(const std::string& path) {
  BlobProto proto;
  read_proto_from_binary_file(path, &proto);
  return proto;
}

std::string mean_value_line(int channel, double value) {
  char line[64];
  std::snprintf(line, sizeof line, "mean_value channel [%d]: %g", channel, value);
  return line;
}

TEST(MeanAccumulator, AveragesPerPixelAndPerChannel) {
  MeanAccumulator mean(DatumShape{2, 1, 2});
  const std::uint8_t first[] = {0, 10, 200, 255};
  const std::uint8_t second[] = {3, 20, 100, 255};
  const float third[] = {3.5f, 0, 0, 0};
  mean.add(first);
  mean.add(second);
  MeanAccumulator other(DatumShape{2, 1, 2});
  other.add(third);
  mean.merge(other);
  EXPECT_EQ(mean.count(), 3u);
  const std::vector<float> expected = {6.5f / 3, 10.0f, 100.0f, 170.0f};
  const std::vector<float> values = mean.mean();
  ASSERT_EQ(values.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(values[i], expected[i]);
  const std::vector<double> channels = mean.channel_means();
  ASSERT_EQ(channels.size(), 2u);
  EXPECT_DOUBLE_EQ(channels[0], (6.5 / 3 + 10.0) / 2);
  EXPECT_DOUBLE_EQ(channels[1], (100.0 + 170.0) / 2);

  const BlobProto proto = mean.to_blob_proto();
  EXPECT_FALSE(proto.has_shape());  // Caffe 1.0's legacy 4-d fields
  EXPECT_EQ(proto.num(), 1);
  EXPECT_EQ(proto.channels(), 2);
  EXPECT_EQ(proto.height(), 1);
  EXPECT_EQ(proto.width(), 2);
  ASSERT_EQ(proto.data_size(), 4);
  EXPECT_FLOAT_EQ(proto.data(3), 170.0f);

  EXPECT_THROW(MeanAccumulator(DatumShape{1, 1, 1}).mean(), Error);
  EXPECT_THROW(mean.merge(MeanAccumulator(DatumShape{1, 2, 2})), Error);
  EXPECT_THROW(MeanAccumulator(DatumShape{0, 1, 1}), Error);
}

TEST(MeanAccumulator, IntegerSumsNeverOverflow) {
  // More white pixels than a uint32 sum of 255s can hold.
  const std::size_t count = 0xFFFFFFFFu / 255u + 5;
  MeanAccumulator mean(DatumShape{1, 1, 1});
  const std::uint8_t white = 255;
  for (std::size_t i = 0; i < count; ++i) mean.add(&white);
  EXPECT_EQ(mean.count(), count);
  EXPECT_EQ(mean.mean()[0], 255.0f);
  EXPECT_EQ(mean.channel_means()[0], 255.0);
}

// 37 records of 3x4x5 whose pixel j of image i is (13 i + 7 j) mod 256.
std::vector<testing::FixtureImage> pattern_images(int count, int size) {
  std::vector<testing::FixtureImage> images(count);
  for (int i = 0; i < count; ++i) {
    images[i].label = i % 3;
    for (int j = 0; j < size; ++j) images[i].pixels.push_back((13 * i + 7 * j) % 256);
  }
  return images;
}

TEST(ComputeMean, MatchesTheMeanComputedByHand) {
  TempDir dir("compute_mean");
  const auto images = pattern_images(37, 3 * 4 * 5);
  testing::write_datum_lmdb(dir.file("db"), 3, 4, 5, images);
  const ToolResult result = compute_mean(dir.file("db"), dir.file("mean.binaryproto"));
  ASSERT_EQ(result.exit_code, 0) << result.output;

  std::vector<double> by_hand(60, 0.0);
  for (const auto& image : images) {
    for (int j = 0; j < 60; ++j) by_hand[j] += image.pixels[j];
  }
  const BlobProto proto = read_blob(dir.file("mean.binaryproto"));
  EXPECT_EQ(proto.num(), 1);
  EXPECT_EQ(proto.channels(), 3);
  EXPECT_EQ(proto.height(), 4);
  EXPECT_EQ(proto.width(), 5);
  ASSERT_EQ(proto.data_size(), 60);
  for (int j = 0; j < 60; ++j) EXPECT_FLOAT_EQ(proto.data(j), by_hand[j] / 37) << j;

  EXPECT_TRUE(contains(result.output, "Number of channels: 3")) << result.output;
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int j = 0; j < 20; ++j) sum += by_hand[c * 20 + j] / 37;
    EXPECT_TRUE(contains(result.output, mean_value_line(c, sum / 20))) << result.output;
  }
  // The Data layer's mean-file reader takes it as (1, C, H, W).
  EXPECT_EQ(read_mean_file(dir.file("mean.binaryproto")).shape, (std::vector<int>{1, 3, 4, 5}));

  // One thread or many: the same bytes. No output file: only printed.
  ASSERT_EQ(compute_mean(dir.file("db"), dir.file("one.binaryproto"), "--threads=1").exit_code, 0);
  ASSERT_EQ(compute_mean(dir.file("db"), dir.file("five.binaryproto"), "--threads=5").exit_code, 0);
  EXPECT_EQ(testing::file_bytes(dir.file("one.binaryproto")),
            testing::file_bytes(dir.file("mean.binaryproto")));
  EXPECT_EQ(testing::file_bytes(dir.file("five.binaryproto")),
            testing::file_bytes(dir.file("mean.binaryproto")));
  const ToolResult printed = compute_mean(dir.file("db"));
  ASSERT_EQ(printed.exit_code, 0) << printed.output;
  EXPECT_TRUE(contains(printed.output, "mean_value channel [2]: ")) << printed.output;
}

TEST(ComputeMean, AveragesFloatDataRecords) {
  TempDir dir("compute_mean");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    for (int i = 0; i < 3; ++i) {
      Datum datum;
      datum.set_channels(1);
      datum.set_height(1);
      datum.set_width(2);
      datum.add_float_data(0.5f * i);
      datum.add_float_data(-1.0f * i);
      writer.put("k" + std::to_string(i), datum.SerializeAsString());
    }
    writer.commit();
  }
  const ToolResult result = compute_mean(dir.file("db"), dir.file("mean.binaryproto"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const BlobProto proto = read_blob(dir.file("mean.binaryproto"));
  ASSERT_EQ(proto.data_size(), 2);
  EXPECT_FLOAT_EQ(proto.data(0), 0.5f);
  EXPECT_FLOAT_EQ(proto.data(1), -1.0f);
}

TEST(ComputeMean, FashionMnistPngsRawAndEncodedGiveTheIdxMean) {
  XTRAIN_SKIP_WITHOUT_FASHION_MNIST();
  TempDir dir("compute_mean");
  const IdxDataset fashion = testing::fashion_mnist_test_set(200);
  const auto listed = testing::write_fashion_pngs(dir.file("images"), fashion);
  const std::string list = dir.write("list.txt", testing::list_text(listed));
  const std::string convert = "'" + tool_path("convert_imageset") + "' --gray '" +
                              dir.file("images") + "/' '" + list + "' ";
  ASSERT_EQ(run_tool(convert + "'" + dir.file("raw_db") + "'").exit_code, 0);
  ASSERT_EQ(run_tool(convert + "--encoded '" + dir.file("encoded_db") + "'").exit_code, 0);

  ToolResult result = compute_mean(dir.file("raw_db"), dir.file("raw.binaryproto"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  result = compute_mean(dir.file("encoded_db"), dir.file("encoded.binaryproto"));
  ASSERT_EQ(result.exit_code, 0) << result.output;

  std::vector<double> by_hand(28 * 28, 0.0);
  double total = 0;
  for (std::size_t i = 0; i < 200; ++i) {
    for (int j = 0; j < 28 * 28; ++j) {
      by_hand[j] += fashion.images.image(i)[j];
      total += fashion.images.image(i)[j];
    }
  }
  const BlobProto raw = read_blob(dir.file("raw.binaryproto"));
  ASSERT_EQ(raw.data_size(), 28 * 28);
  EXPECT_EQ(raw.channels(), 1);
  for (int j = 0; j < 28 * 28; ++j) ASSERT_FLOAT_EQ(raw.data(j), by_hand[j] / 200) << j;
  EXPECT_EQ(testing::file_bytes(dir.file("encoded.binaryproto")),
            testing::file_bytes(dir.file("raw.binaryproto")));
  EXPECT_TRUE(contains(result.output, mean_value_line(0, total / (200.0 * 28 * 28))))
      << result.output;
}

TEST(ComputeMean, EncodedColourJpegsGiveTheMeanOfTheRawRecords) {
  TempDir dir("compute_mean");
  const auto listed =
      testing::write_colour_jpegs(dir.file("images"), std::vector<cv::Size>(9, cv::Size(32, 24)));
  const std::string list = dir.write("list.txt", testing::list_text(listed));
  const std::string convert =
      "'" + tool_path("convert_imageset") + "' '" + dir.file("images") + "/' '" + list + "' ";
  ASSERT_EQ(run_tool(convert + "'" + dir.file("raw_db") + "'").exit_code, 0);
  ASSERT_EQ(run_tool(convert + "--encoded '" + dir.file("jpg_db") + "'").exit_code, 0);
  ASSERT_EQ(compute_mean(dir.file("raw_db"), dir.file("raw.binaryproto")).exit_code, 0);
  const ToolResult result = compute_mean(dir.file("jpg_db"), dir.file("jpg.binaryproto"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "Number of channels: 3")) << result.output;

  // By hand over the raw records.
  std::vector<double> by_hand(3 * 24 * 32, 0.0);
  const auto records = testing::read_records(dir.file("raw_db"));
  ASSERT_EQ(records.size(), 9u);
  for (const auto& record : records) {
    for (std::size_t j = 0; j < by_hand.size(); ++j) {
      by_hand[j] += static_cast<std::uint8_t>(record.datum.data()[j]);
    }
  }
  const BlobProto mean = read_blob(dir.file("jpg.binaryproto"));
  EXPECT_EQ(mean.channels(), 3);
  EXPECT_EQ(mean.height(), 24);
  EXPECT_EQ(mean.width(), 32);
  ASSERT_EQ(mean.data_size(), static_cast<int>(by_hand.size()));
  for (std::size_t j = 0; j < by_hand.size(); ++j) {
    ASSERT_FLOAT_EQ(mean.data(static_cast<int>(j)), by_hand[j] / 9) << j;
  }
  EXPECT_EQ(testing::file_bytes(dir.file("jpg.binaryproto")),
            testing::file_bytes(dir.file("raw.binaryproto")));
}

TEST(ComputeMean, RecordsOfAnotherSizeAreNamed) {
  TempDir dir("compute_mean");
  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("db")));
    const std::vector<unsigned char> small(4, 9);
    const std::vector<unsigned char> large(9, 9);
    for (int i = 0; i < 300; ++i) {
      char key[16];
      std::snprintf(key, sizeof key, "%08d", i);
      const bool odd_one = i == 217;
      const Datum datum = make_datum(odd_one ? DatumShape{1, 3, 3} : DatumShape{1, 2, 2},
                                     odd_one ? large.data() : small.data(), 0);
      writer.put(key, datum.SerializeAsString());
    }
    writer.commit();
  }
  const ToolResult result = compute_mean(dir.file("db"), dir.file("mean.binaryproto"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output),
            "compute_mean: error: record '00000217' of LMDB '" + dir.file("db") +
                "' is 1x3x3 but the first record ('00000000') is 1x2x2 (channels x height x "
                "width); a mean needs images of one size (convert with --resize_width and "
                "--resize_height)");
  EXPECT_FALSE(std::filesystem::exists(dir.file("mean.binaryproto")));
}

TEST(ComputeMean, EmptyMissingAndCorruptDatabasesAreErrors) {
  TempDir dir("compute_mean");
  LmdbDatabase::open_for_writing(dir.file("empty_db"));
  ToolResult result = compute_mean(dir.file("empty_db"), dir.file("mean.binaryproto"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output), "compute_mean: error: LMDB '" +
                                                   dir.file("empty_db") +
                                                   "' holds no records; nothing to average");

  result = compute_mean(dir.file("missing_db"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(testing::last_line(result.output).rfind("compute_mean: error: ", 0), 0u);

  {
    LmdbWriter writer(LmdbDatabase::open_for_writing(dir.file("bad_db")));
    writer.put("00000000", "definitely not a Datum \xff\xff\xff");
    writer.commit();
  }
  result = compute_mean(dir.file("bad_db"));
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(
      result.output, "record '00000000' of LMDB '" + dir.file("bad_db") + "' is not a valid Datum"))
      << result.output;

  result = compute_mean(dir.file("empty_db"), "", "--backend=leveldb");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.output, "LevelDB is not supported")) << result.output;
  result = run_tool("'" + tool_path("compute_mean") + "'");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(contains(result.output, "compute_mean [FLAGS] INPUT_DB [OUTPUT_FILE]"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("mean.binaryproto")));
}

}  // namespace
}  // namespace xtrain

// xtrain extract_features: the blobs of a trained net, item by item, in
// LMDBs under Caffe's keys, equal to a forward pass run here.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "lmdb_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/lmdb_database.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto/xtrain.pb.h"
#include "xtrain/proto_io.hpp"

namespace xtrain::testing {
namespace {

constexpr int kRecords = 5;
constexpr int kBatch = 2;
constexpr int kIterations = 3;  // 6 items: the data layer wraps around to record 0

std::string feature_net(const std::string& source) {
  return R"(name: "features"
layer { name: "data" type: "Data" top: "data" top: "label"
        transform_param { scale: 0.01 }
        data_param { source: ")" +
         source + R"(" batch_size: 2 backend: LMDB } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 1 }
                              bias_filler { type: "gaussian" std: 1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }
)";
}

struct StoredRecord {
  std::string key;
  Datum datum;
};

std::vector<StoredRecord> read_records(const std::string& path) {
  std::vector<StoredRecord> records;
  LmdbCursor cursor(LmdbDatabase::open_for_reading(path));
  for (; cursor.valid(); cursor.next()) {
    StoredRecord record;
    record.key = std::string(cursor.key());
    EXPECT_TRUE(record.datum.ParseFromString(std::string(cursor.value()))) << record.key;
    records.push_back(record);
  }
  return records;
}

class ExtractFeatures : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<FixtureImage> images;
    for (int i = 0; i < kRecords; ++i) {
      FixtureImage image;
      image.label = i;
      for (int p = 0; p < 9; ++p) image.pixels.push_back(static_cast<unsigned char>(20 * i + p));
      images.push_back(image);
    }
    write_datum_lmdb(dir_.file("images_lmdb"), 1, 3, 3, images);
    net_ = dir_.write("net.prototxt", feature_net(dir_.file("images_lmdb")));
    // Weights drawn by the fillers of a net built here, saved as a caffemodel.
    NetOptions options;
    options.random_seed = 7;
    Net trained(net_, TEST, 0, {}, options);
    NetParameter weights;
    trained.to_proto(&weights);
    weights_ = dir_.file("features.caffemodel");
    write_proto_to_binary_file(weights, weights_);
  }

  // Each item's values of `blob`, from kIterations forward passes run here.
  std::vector<std::vector<float>> expected_items(const std::string& blob) const {
    Net net(net_, TEST);
    net.copy_trained_layers_from(weights_);
    std::vector<std::vector<float>> items;
    for (int i = 0; i < kIterations; ++i) {
      net.forward();
      const Blob& values = *net.blob_by_name(blob);
      const std::size_t per_item = values.count() / values.shape(0);
      for (int n = 0; n < values.shape(0); ++n) {
        const float* item = values.cpu_data() + n * per_item;
        items.emplace_back(item, item + per_item);
      }
    }
    return items;
  }

  void expect_features(const std::string& db, const std::string& blob, int channels, int height,
                       int width) const {
    const std::vector<StoredRecord> records = read_records(db);
    const std::vector<std::vector<float>> expected = expected_items(blob);
    ASSERT_EQ(records.size(), static_cast<std::size_t>(kIterations * kBatch));
    ASSERT_EQ(expected.size(), records.size());
    for (std::size_t k = 0; k < records.size(); ++k) {
      char key[32];
      std::snprintf(key, sizeof key, "%010zu", k);
      EXPECT_EQ(records[k].key, key);
      const Datum& datum = records[k].datum;
      EXPECT_EQ(datum.channels(), channels) << key;
      EXPECT_EQ(datum.height(), height) << key;
      EXPECT_EQ(datum.width(), width) << key;
      EXPECT_TRUE(datum.data().empty()) << key;
      ASSERT_EQ(static_cast<std::size_t>(datum.float_data_size()), expected[k].size()) << key;
      for (std::size_t d = 0; d < expected[k].size(); ++d) {
        EXPECT_NEAR(datum.float_data(static_cast<int>(d)), expected[k][d], 1e-5f)
            << blob << " item " << k << " value " << d;
      }
    }
  }

  std::string extract(const std::string& flags) const {
    return tool_path("xtrain") + " extract_features --model=" + net_ + " --weights=" + weights_ +
           " " + flags;
  }

  TempDir dir_{"extract"};
  std::string net_;
  std::string weights_;
};

TEST_F(ExtractFeatures, WritesEveryItemOfEveryBatchUnderCaffesKeys) {
  const ToolResult result =
      run_tool(extract("--blobs=ip,data --outputs=" + dir_.file("ip_db") + "," +
                       dir_.file("data_db") + " --iterations=" + std::to_string(kIterations)));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // ip (2x4, after the in-place ReLU): 4 channels; data: Caffe keeps C x H x W.
  expect_features(dir_.file("ip_db"), "ip", 4, 1, 1);
  expect_features(dir_.file("data_db"), "data", 1, 3, 3);
  // The 6th item is the first record again (5 records, batches of 2).
  const std::vector<StoredRecord> data = read_records(dir_.file("data_db"));
  EXPECT_FLOAT_EQ(data[5].datum.float_data(8), 0.08f);
  EXPECT_FLOAT_EQ(data[4].datum.float_data(8), 0.88f);
}

TEST_F(ExtractFeatures, CaffesPositionalForm) {
  const ToolResult result =
      run_tool(tool_path("xtrain") + " extract_features " + weights_ + " " + net_ + " prob " +
               dir_.file("prob_db") + " " + std::to_string(kIterations) + " lmdb CPU");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  expect_features(dir_.file("prob_db"), "prob", 4, 1, 1);
}

TEST_F(ExtractFeatures, ExistingOutputIsRefusedAndNothingWritten) {
  std::filesystem::create_directories(dir_.file("data_db"));
  const std::string line =
      expect_one_line_error(run_tool(extract("--blobs=ip,data --outputs=" + dir_.file("ip_db") +
                                             "," + dir_.file("data_db"))),
                            "xtrain extract_features");
  EXPECT_CONTAINS(line, "'" + dir_.file("data_db") + "' already exists");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("ip_db")));
}

TEST_F(ExtractFeatures, BlobsAndOutputsOfDifferentCountsAreRefused) {
  const std::string line =
      expect_one_line_error(run_tool(extract("--blobs=ip,data --outputs=" + dir_.file("one_db"))),
                            "xtrain extract_features");
  EXPECT_CONTAINS(line, "2 blobs");
  EXPECT_CONTAINS(line, "1 output databases");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("one_db")));
}

TEST_F(ExtractFeatures, UnknownBlobIsRefusedWithTheNetsBlobNames) {
  const std::string line = expect_one_line_error(
      run_tool(extract("--blobs=fc7 --outputs=" + dir_.file("fc7_db"))), "xtrain extract_features");
  EXPECT_CONTAINS(line, "'fc7'");
  EXPECT_CONTAINS(line, "data, label, ip, prob");
  EXPECT_FALSE(std::filesystem::exists(dir_.file("fc7_db")));
}

TEST_F(ExtractFeatures, LevelDbIsRefused) {
  const std::string line = expect_one_line_error(
      run_tool(extract("--blobs=ip --outputs=" + dir_.file("ip_db") + " --backend=leveldb")),
      "xtrain extract_features");
  EXPECT_CONTAINS(line, "LevelDB is not supported");
  const std::string positional =
      expect_one_line_error(run_tool(tool_path("xtrain") + " extract_features " + weights_ + " " +
                                     net_ + " ip " + dir_.file("ip_db") + " 1 leveldb"),
                            "xtrain extract_features");
  EXPECT_CONTAINS(positional, "LevelDB is not supported");
}

}  // namespace
}  // namespace xtrain::testing

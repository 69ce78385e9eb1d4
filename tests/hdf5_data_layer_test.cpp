// HDF5Data layer and the Hdf5File reader: exact rows in stream order across
// files (a batch spanning a file boundary, wrap-around), float/double/integer
// datasets, 1-d labels, shuffling (each row once per pass, deterministic per
// seed), every error naming the file and dataset, and a net trained on it.
//
// The layer has no bottoms and no parameters, so there is no gradient to
// check; the net test runs backward through the layers above it.
#include "data/hdf5_data_layer.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "data/hdf5_file.hpp"
#include "hdf5_data_fixture.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

using namespace hdf5_data_fixture;

TEST(Hdf5DataLayer, RowsInOrderAcrossFilesAndWrapAround) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 3));
  write_hdf5(dir.file("b.h5"), numbered_file(1, 4));
  // Blank lines and surrounding spaces are ignored, as in Caffe.
  const std::string list =
      dir.write("list.txt", "\n" + dir.file("a.h5") + "\n\n   " + dir.file("b.h5") + "  \n\n");
  auto layer = LayerRegistry::global().create(hdf5_param(list, 5));
  EXPECT_STREQ(layer->type(), "HDF5Data");
  Tops tops;
  layer->setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{5, 2, 2}));
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{5}));

  // The stream is a0 a1 a2 b0 b1 b2 b3, a0 ...: 7 rows, batches of 5.
  std::vector<std::pair<int, int>> stream;
  for (int r = 0; r < 3; ++r) stream.push_back({0, r});
  for (int r = 0; r < 4; ++r) stream.push_back({1, r});
  for (int n = 0; n < 9; ++n) {
    layer->forward({}, tops.both());
    std::vector<std::pair<int, int>> expected;
    for (int i = 0; i < 5; ++i) expected.push_back(stream[(n * 5 + i) % 7]);
    expect_rows(tops, expected, 4);
  }
}

TEST(Hdf5DataLayer, BatchLargerThanAllRowsWrapsWithinOneForward) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 2));
  const std::string list = dir.write("list.txt", dir.file("a.h5") + "\n");
  Hdf5DataLayer layer(hdf5_param(list, 5));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());
  expect_rows(tops, {{0, 0}, {0, 1}, {0, 0}, {0, 1}, {0, 0}}, 4);
  layer.forward({}, tops.both());
  expect_rows(tops, {{0, 1}, {0, 0}, {0, 1}, {0, 0}, {0, 1}}, 4);
}

TEST(Hdf5DataLayer, DoubleAndIntegerDatasetsAreReadAsFloat) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("double.h5"), numbered_file(0, 3, {2, 2}, Stored::kDouble));
  write_hdf5(dir.file("int.h5"), numbered_file(1, 2, {2, 2}, Stored::kInt32));
  const std::string list =
      dir.write("list.txt", dir.file("double.h5") + "\n" + dir.file("int.h5") + "\n");
  Hdf5DataLayer layer(hdf5_param(list, 5));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());
  expect_rows(tops, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}}, 4);

  // Values that are not whole numbers survive the double -> float conversion.
  write_hdf5(dir.file("fractions.h5"),
             {{"x", {2, 3}, {0.5, -1.25, 3.1, 1e-3, 2.0 / 3.0, -7.75}, Stored::kDouble}});
  std::vector<float> values;
  EXPECT_EQ(Hdf5File(dir.file("fractions.h5")).read_floats("x", &values), (std::vector<int>{2, 3}));
  EXPECT_EQ(values,
            (std::vector<float>{0.5f, -1.25f, 3.1f, 1e-3f, static_cast<float>(2.0 / 3.0), -7.75f}));
}

TEST(Hdf5DataLayer, LabelShapesFollowTheDatasets) {
  TempDir dir("hdf5");
  // Data of rank 2 (N x 3), labels of shape N x 1 and a third top with N x 2 x 1 x 2.
  const std::vector<DatasetSpec> datasets = {
      {"data", {4, 3}, {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}},
      {"label", {4, 1}, {5, 6, 7, 8}},
      {"extra", {4, 2, 1, 2}, std::vector<double>(16, 1.5)}};
  write_hdf5(dir.file("a.h5"), datasets);
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  Hdf5DataLayer layer(hdf5_param(list, 3, false, "top: 'data' top: 'label' top: 'extra'"));
  Blob data, label, extra;
  layer.setup({}, {&data, &label, &extra});
  EXPECT_EQ(data.shape(), (std::vector<int>{3, 3}));
  EXPECT_EQ(label.shape(), (std::vector<int>{3, 1}));
  EXPECT_EQ(extra.shape(), (std::vector<int>{3, 2, 1, 2}));
  layer.forward({}, {&data, &label, &extra});
  layer.forward({}, {&data, &label, &extra});
  // Second batch: rows 3, 0, 1.
  EXPECT_EQ(std::vector<float>(data.cpu_data(), data.cpu_data() + 9),
            (std::vector<float>{30, 31, 32, 0, 1, 2, 10, 11, 12}));
  EXPECT_EQ(std::vector<float>(label.cpu_data(), label.cpu_data() + 3),
            (std::vector<float>{8, 5, 6}));
  EXPECT_EQ(extra.cpu_data()[11], 1.5f);
}

TEST(Hdf5DataLayer, OneDimensionalDataAndLabels) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), {{"data", {3}, {7, 8, 9}}, {"label", {3}, {0, 1, 2}}});
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  Hdf5DataLayer layer(hdf5_param(list, 2));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.data.shape(), (std::vector<int>{2}));
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{2}));
  layer.forward({}, tops.both());
  layer.forward({}, tops.both());
  EXPECT_EQ(tops.data.cpu_data()[0], 9.0f);
  EXPECT_EQ(tops.data.cpu_data()[1], 7.0f);
  EXPECT_EQ(tops.label.cpu_data()[0], 2.0f);
  EXPECT_EQ(tops.label.cpu_data()[1], 0.0f);
}

// A dataset whose rows hold no values (N x 0) gives an empty top, as in
// Caffe, and the other tops are filled as usual (the hdf5_data fuzzer found
// the copy into the empty top's null pointer).
TEST(Hdf5DataLayer, RowsOfNoValuesGiveAnEmptyTop) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), {{"data", {3, 2}, {0, 1, 10, 11, 20, 21}}, {"label", {3, 0}, {}}});
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  Hdf5DataLayer layer(hdf5_param(list, 2));
  Tops tops;
  layer.setup({}, tops.both());
  EXPECT_EQ(tops.label.shape(), (std::vector<int>{2, 0}));
  layer.forward({}, tops.both());
  layer.forward({}, tops.both());
  EXPECT_EQ(tops.label.count(), 0u);
  EXPECT_EQ(std::vector<float>(tops.data.cpu_data(), tops.data.cpu_data() + 4),
            (std::vector<float>{20, 21, 0, 1}));
}

// The (file, row) of every item of `passes` forwards, each of one whole pass.
// Three numbered files of `rows` rows each, and their list.
std::string write_numbered_files(const TempDir& dir, const std::vector<int>& rows) {
  std::string listing;
  for (std::size_t f = 0; f < rows.size(); ++f) {
    const std::string path = dir.file("f" + std::to_string(f) + ".h5");
    write_hdf5(path, numbered_file(static_cast<int>(f), rows[f]));
    listing += path + "\n";
  }
  return dir.write("list.txt", listing);
}

// The (file, row) of every item of `batches` forwards of a layer with batch
// `batch_size`, data-parallel replica `shard`, seeded with `seed` (the data
// rows checked against their labels).
std::vector<std::vector<std::pair<int, int>>> read_batches(const std::string& list, int batch_size,
                                                           bool shuffle, DataShard shard,
                                                           int batches, std::uint64_t seed = 7) {
  Hdf5DataLayer layer(hdf5_param(list, batch_size, shuffle));
  layer.set_data_shard(shard);
  layer.seed(seed);
  Tops tops;
  layer.setup({}, tops.both());
  std::vector<std::vector<std::pair<int, int>>> out;
  for (int k = 0; k < batches; ++k) {
    layer.forward({}, tops.both());
    out.emplace_back();
    for (int item = 0; item < batch_size; ++item) {
      const int label = static_cast<int>(tops.label.cpu_data()[item]);
      const int file = label / 10, row = label % 10;
      // The data rows move with their labels.
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(tops.data.cpu_data()[item * 4 + j], data_value(file, row, j));
      }
      out.back().push_back({file, row});
    }
  }
  return out;
}

std::vector<std::pair<int, int>> shuffled_stream(const std::string& list, int rows_per_pass,
                                                 int passes, std::uint64_t seed) {
  std::vector<std::pair<int, int>> seen;
  for (const auto& batch : read_batches(list, rows_per_pass, true, DataShard{}, passes, seed)) {
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  return seen;
}

TEST(Hdf5DataLayer, ShuffleVisitsEveryRowOncePerPassAndDependsOnlyOnTheSeed) {
  TempDir dir("hdf5");
  const std::vector<int> rows = {3, 4, 5};
  const std::string list = write_numbered_files(dir, rows);
  const int per_pass = 12, passes = 6;

  const auto seen = shuffled_stream(list, per_pass, passes, 42);
  std::set<std::vector<std::pair<int, int>>> distinct_passes;
  bool some_pass_is_not_in_order = false;
  for (int pass = 0; pass < passes; ++pass) {
    const std::vector<std::pair<int, int>> one(seen.begin() + pass * per_pass,
                                               seen.begin() + (pass + 1) * per_pass);
    // Every row exactly once...
    std::vector<std::pair<int, int>> sorted = one;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<int, int>> all;
    for (int f = 0; f < 3; ++f)
      for (int r = 0; r < rows[f]; ++r) all.push_back({f, r});
    EXPECT_EQ(sorted, all) << "pass " << pass;
    // ... and a file's rows together (one file in memory at a time).
    int blocks = 1;
    for (int i = 1; i < per_pass; ++i) blocks += one[i].first != one[i - 1].first;
    EXPECT_EQ(blocks, 3) << "pass " << pass;
    some_pass_is_not_in_order |= one != all;
    distinct_passes.insert(one);
  }
  EXPECT_TRUE(some_pass_is_not_in_order);
  EXPECT_GT(distinct_passes.size(), 1u) << "the order must be redrawn between passes";

  EXPECT_EQ(shuffled_stream(list, per_pass, passes, 42), seen);
  EXPECT_NE(shuffled_stream(list, per_pass, passes, 43), seen);
}

// N replicas with batch B read, batch after batch, the N slices of what one
// layer with batch N*B reads: across file ends, wrap-around and shuffling.
TEST(Hdf5DataLayer, ShardsComposeIntoTheUnshardedBatch) {
  TempDir dir("hdf5");
  const std::vector<int> rows = {3, 4, 5};
  const std::string list = write_numbered_files(dir, rows);
  for (const bool shuffle : {false, true}) {
    for (const auto& [count, batch] : {std::pair{2, 2}, std::pair{3, 2}, std::pair{2, 5}}) {
      constexpr int kBatches = 7;  // several passes over the 12 rows
      const auto whole = read_batches(list, count * batch, shuffle, DataShard{}, kBatches);
      std::vector<std::vector<std::vector<std::pair<int, int>>>> shards;
      for (int index = 0; index < count; ++index) {
        shards.push_back(read_batches(list, batch, shuffle, DataShard{index, count}, kBatches));
      }
      for (int k = 0; k < kBatches; ++k) {
        std::vector<std::pair<int, int>> joined;
        for (const auto& shard : shards) {
          joined.insert(joined.end(), shard[k].begin(), shard[k].end());
        }
        EXPECT_EQ(joined, whole[k])
            << count << " shards of " << batch << ", batch " << k << (shuffle ? ", shuffled" : "");
      }
    }
  }
}

TEST(Hdf5DataLayer, ShuffleWithOneFileRedrawsTheRowOrderEachPass) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 8));
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  const auto seen = shuffled_stream(list, 8, 4, 7);
  std::set<std::vector<std::pair<int, int>>> distinct_passes;
  for (int pass = 0; pass < 4; ++pass) {
    std::vector<std::pair<int, int>> one(seen.begin() + pass * 8, seen.begin() + (pass + 1) * 8);
    distinct_passes.insert(one);
    std::sort(one.begin(), one.end());
    for (int r = 0; r < 8; ++r) EXPECT_EQ(one[r], std::make_pair(0, r)) << "pass " << pass;
  }
  EXPECT_GT(distinct_passes.size(), 1u);
}

// --- In a net -----------------------------------------------------------------

TEST(Hdf5DataLayer, FeedsANetThatLearns) {
  TempDir dir("hdf5");
  // Three classes of 4-d points, two files, labels stored as floats.
  auto make_file = [](int first_row, int rows) {
    DatasetSpec data{"data", {static_cast<hsize_t>(rows), 4}, {}};
    DatasetSpec label{"label", {static_cast<hsize_t>(rows)}, {}};
    for (int r = first_row; r < first_row + rows; ++r) {
      const int cls = r % 3;
      for (int j = 0; j < 4; ++j)
        data.values.push_back((j == cls ? 1.0 : 0.0) + 0.1 * std::sin(r + j));
      label.values.push_back(cls);
    }
    return std::vector<DatasetSpec>{data, label};
  };
  write_hdf5(dir.file("a.h5"), make_file(0, 5));
  write_hdf5(dir.file("b.h5"), make_file(5, 7));
  const std::string list = dir.write("list.txt", dir.file("a.h5") + "\n" + dir.file("b.h5") + "\n");

  NetParameter param;
  read_proto_from_text_string(R"(
    name: "hdf5_net"
    layer { name: "h5" type: "HDF5Data" top: "data" top: "label"
            hdf5_data_param { source: ")" +
                                  list + R"(" batch_size: 12 } }
    layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
            inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
    layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
  )",
                              &param);
  param.mutable_state()->set_phase(TRAIN);
  NetOptions options;
  options.verbose = false;
  Net net(param, options);
  EXPECT_EQ(net.blob_by_name("data")->shape(), (std::vector<int>{12, 4}));
  EXPECT_EQ(net.blob_by_name("label")->shape(), (std::vector<int>{12}));
  EXPECT_FALSE(net.layer_needs_backward(0));

  // A batch of 12 is exactly one pass, so every step sees the same data and
  // plain gradient descent must lower the loss.
  float first_loss = 0.0f, loss = 0.0f;
  for (int step = 0; step < 30; ++step) {
    net.clear_param_diffs();
    loss = net.forward_backward();
    ASSERT_TRUE(std::isfinite(loss));
    if (step == 0) {
      first_loss = loss;
      EXPECT_NEAR(loss, std::log(3.0f), 0.2f);
      const float* labels = net.blob_by_name("label")->cpu_data();
      for (int i = 0; i < 12; ++i) EXPECT_EQ(labels[i], static_cast<float>(i % 3));
      EXPECT_GT(net.learnable_params()[0]->asum_diff(), 0.0);
    }
    for (Blob* blob : net.learnable_params()) {
      blob->scale_diff(1.0f);
      blob->update();
    }
  }
  EXPECT_LT(loss, 0.5f * first_loss);
}

}  // namespace
}  // namespace xtrain

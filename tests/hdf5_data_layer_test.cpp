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
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

// What to write into one dataset of a test file.
enum class Stored { kFloat, kDouble, kInt32, kString };

struct DatasetSpec {
  std::string name;
  std::vector<hsize_t> dims;
  std::vector<double> values;  // converted by HDF5 to the stored type
  Stored stored = Stored::kFloat;
};

// Writes an HDF5 file with the C API, as h5py or Caffe's tools would.
void write_hdf5(const std::string& path, const std::vector<DatasetSpec>& datasets) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  for (const DatasetSpec& spec : datasets) {
    const hid_t space =
        H5Screate_simple(static_cast<int>(spec.dims.size()), spec.dims.data(), nullptr);
    ASSERT_GE(space, 0);
    if (spec.stored == Stored::kString) {
      const hid_t type = H5Tcopy(H5T_C_S1);
      H5Tset_size(type, 4);
      const hid_t dataset =
          H5Dcreate2(file, spec.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      ASSERT_GE(dataset, 0);
      std::vector<char> text(4 * spec.values.size(), 'x');
      ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()), 0);
      H5Dclose(dataset);
      H5Tclose(type);
    } else {
      const hid_t type = spec.stored == Stored::kFloat    ? H5T_IEEE_F32LE
                         : spec.stored == Stored::kDouble ? H5T_IEEE_F64LE
                                                          : H5T_STD_I32LE;
      const hid_t dataset =
          H5Dcreate2(file, spec.name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      ASSERT_GE(dataset, 0) << spec.name;
      if (!spec.values.empty()) {
        ASSERT_GE(
            H5Dwrite(dataset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, spec.values.data()),
            0);
      }
      H5Dclose(dataset);
    }
    H5Sclose(space);
  }
  H5Fclose(file);
}

// Row r of test file f: data values 100 f + 10 r + j (j < row size), label
// 10 f + r, so every value says where it came from.
double data_value(int file, int row, int j) { return 100.0 * file + 10.0 * row + j; }
double label_value(int file, int row) { return 10.0 * file + row; }

std::vector<DatasetSpec> numbered_file(int file, int rows, std::vector<hsize_t> row_dims = {2, 2},
                                       Stored stored = Stored::kFloat) {
  DatasetSpec data{"data", {static_cast<hsize_t>(rows)}, {}, stored};
  data.dims.insert(data.dims.end(), row_dims.begin(), row_dims.end());
  std::size_t row_size = 1;
  for (hsize_t d : row_dims) row_size *= d;
  DatasetSpec label{"label", {static_cast<hsize_t>(rows)}, {}, stored};
  for (int r = 0; r < rows; ++r) {
    for (std::size_t j = 0; j < row_size; ++j) data.values.push_back(data_value(file, r, j));
    label.values.push_back(label_value(file, r));
  }
  return {data, label};
}

LayerParameter hdf5_param(const std::string& source, int batch_size, bool shuffle = false,
                          const std::string& tops = "top: 'data' top: 'label'") {
  LayerParameter param;
  read_proto_from_text_string("name: 'h5' type: 'HDF5Data' " + tops, &param);
  param.mutable_hdf5_data_param()->set_source(source);
  param.mutable_hdf5_data_param()->set_batch_size(batch_size);
  param.mutable_hdf5_data_param()->set_shuffle(shuffle);
  return param;
}

struct Tops {
  Blob data;
  Blob label;
  BlobVec both() { return {&data, &label}; }
};

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// (file, row) of each batch item, checked against both tops.
void expect_rows(const Tops& tops, const std::vector<std::pair<int, int>>& rows, int row_size) {
  ASSERT_EQ(tops.label.count(), rows.size());
  for (std::size_t item = 0; item < rows.size(); ++item) {
    const auto [file, row] = rows[item];
    EXPECT_EQ(tops.label.cpu_data()[item], label_value(file, row)) << "item " << item;
    for (int j = 0; j < row_size; ++j) {
      ASSERT_EQ(tops.data.cpu_data()[item * row_size + j], data_value(file, row, j))
          << "item " << item << " (file " << file << ", row " << row << "), value " << j;
    }
  }
}

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

// --- Errors -----------------------------------------------------------------

std::string setup_error(const LayerParameter& param) {
  Hdf5DataLayer layer(param);
  Tops tops;
  return error_of([&] { layer.setup({}, tops.both()); });
}

TEST(Hdf5DataLayer, MissingSourceListIsAnError) {
  TempDir dir("hdf5");
  const std::string message = setup_error(hdf5_param(dir.file("absent.txt"), 2));
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data)")) << message;
  EXPECT_TRUE(contains(message, "cannot open hdf5_data_param.source '" + dir.file("absent.txt")))
      << message;
}

TEST(Hdf5DataLayer, EmptySourceListIsAnError) {
  TempDir dir("hdf5");
  const std::string list = dir.write("list.txt", "\n  \n\n");
  const std::string message = setup_error(hdf5_param(list, 2));
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data)")) << message;
  EXPECT_TRUE(contains(message, "'" + list + "' lists no HDF5 files")) << message;
}

TEST(Hdf5DataLayer, MissingHdf5FileIsAnErrorWhenItIsReached) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 3));
  const std::string list =
      dir.write("list.txt", dir.file("a.h5") + "\n" + dir.file("absent.h5") + "\n");
  Hdf5DataLayer layer(hdf5_param(list, 2));
  Tops tops;
  layer.setup({}, tops.both());
  layer.forward({}, tops.both());  // rows a0 a1
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data), source '" + list + "'")) << message;
  EXPECT_TRUE(contains(message, "HDF5 file '" + dir.file("absent.h5") + "' does not exist"))
      << message;

  // Listed first, it fails at setup.
  const std::string first = dir.write("first.txt", dir.file("absent.h5"));
  EXPECT_TRUE(contains(setup_error(hdf5_param(first, 2)), "'" + dir.file("absent.h5") + "'"));
}

TEST(Hdf5DataLayer, FileThatIsNotHdf5IsAnError) {
  TempDir dir("hdf5");
  const std::string text = dir.write("a.h5", "not an HDF5 file\n");
  const std::string list = dir.write("list.txt", text);
  const std::string message = setup_error(hdf5_param(list, 2));
  EXPECT_TRUE(contains(message, "'" + text + "' is not an HDF5 file")) << message;
}

TEST(Hdf5DataLayer, MissingDatasetNamesTheFileTopAndDatasets) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), {{"data", {2, 1}, {1, 2}}, {"labels", {2}, {0, 1}}});
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  const std::string message = setup_error(hdf5_param(list, 2));
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data)")) << message;
  EXPECT_TRUE(contains(message, "HDF5 file '" + dir.file("a.h5") + "' has no dataset 'label'"))
      << message;
  EXPECT_TRUE(contains(message, "its datasets: data, labels")) << message;
}

TEST(Hdf5DataLayer, DatasetsWithDifferentRowCountsAreAnError) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"),
             {{"data", {3, 2}, std::vector<double>(6, 0.0)}, {"label", {2}, {0, 1}}});
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  const std::string message = setup_error(hdf5_param(list, 2));
  EXPECT_TRUE(contains(message, "in HDF5 file '" + dir.file("a.h5") +
                                    "' dataset 'label' has 2 rows but dataset 'data' has 3"))
      << message;
}

TEST(Hdf5DataLayer, FileWithNoRowsIsAnError) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 2));
  write_hdf5(dir.file("empty.h5"), {{"data", {0, 2, 2}, {}}, {"label", {0}, {}}});
  // Listed second, the empty file is found when the stream reaches it.
  const std::string list =
      dir.write("list.txt", dir.file("a.h5") + "\n" + dir.file("empty.h5") + "\n");
  Hdf5DataLayer layer(hdf5_param(list, 3));
  Tops tops;
  layer.setup({}, tops.both());
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data)")) << message;
  EXPECT_TRUE(
      contains(message, "in HDF5 file '" + dir.file("empty.h5") + "' dataset 'data' has 0 rows"))
      << message;
}

TEST(Hdf5DataLayer, RowShapeThatChangesBetweenFilesIsAnError) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 2, {2, 2}));
  write_hdf5(dir.file("b.h5"), numbered_file(1, 2, {4}));
  const std::string list = dir.write("list.txt", dir.file("a.h5") + "\n" + dir.file("b.h5") + "\n");
  Hdf5DataLayer layer(hdf5_param(list, 2));
  Tops tops;
  layer.setup({}, tops.both());
  const std::string message = error_of([&] { layer.forward({}, tops.both()); });
  EXPECT_TRUE(contains(message, "in HDF5 file '" + dir.file("b.h5") +
                                    "' the rows of dataset 'data' have shape 4, but in '" +
                                    dir.file("a.h5") + "' they have shape 2 x 2"))
      << message;
}

TEST(Hdf5DataLayer, TransformParamAndZeroBatchAreRefused) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), numbered_file(0, 2));
  const std::string list = dir.write("list.txt", dir.file("a.h5"));
  LayerParameter param = hdf5_param(list, 2);
  param.mutable_transform_param()->set_scale(0.5f);
  EXPECT_TRUE(contains(setup_error(param), "does not transform data"));
  EXPECT_TRUE(contains(setup_error(hdf5_param(list, 0)), "batch_size must be positive"));
}

// --- Hdf5File on its own -----------------------------------------------------

TEST(Hdf5File, ListsAndReadsDatasets) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), {{"b", {2}, {1, 2}, Stored::kInt32},
                                {"a", {1, 2, 2}, {1, 2, 3, 4}},
                                {"name", {1}, {0}, Stored::kString}});
  const Hdf5File file(dir.file("a.h5"));
  EXPECT_EQ(file.path(), dir.file("a.h5"));
  EXPECT_EQ(file.dataset_names(), (std::vector<std::string>{"a", "b", "name"}));
  EXPECT_TRUE(file.has_dataset("a"));
  EXPECT_TRUE(file.has_dataset("/a"));
  EXPECT_FALSE(file.has_dataset("c"));
  EXPECT_FALSE(file.has_dataset("c/d"));
  EXPECT_FALSE(file.has_dataset(""));
  EXPECT_EQ(file.dataset_dims("a"), (std::vector<int>{1, 2, 2}));
  std::vector<float> values;
  EXPECT_EQ(file.read_floats("b", &values), (std::vector<int>{2}));
  EXPECT_EQ(values, (std::vector<float>{1, 2}));

  const std::string strings = error_of([&] { file.read_floats("name", &values); });
  EXPECT_TRUE(contains(
      strings, "dataset 'name' in HDF5 file '" + dir.file("a.h5") + "' holds string values"))
      << strings;
  const std::string missing = error_of([&] { file.dataset_dims("c"); });
  EXPECT_TRUE(contains(missing, "HDF5 file '" + dir.file("a.h5") + "' has no dataset 'c'"))
      << missing;
}

TEST(Hdf5File, DamagedFilesGiveHdf5sReasonAndKeepTheCallersErrorHandler) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("whole.h5"), {{"x", {1000}, std::vector<double>(1000, 1.0)}});
  // The first 1000 bytes: the signature is there, the rest is cut off.
  {
    std::ifstream whole(dir.file("whole.h5"), std::ios::binary);
    std::string head(1000, '\0');
    whole.read(head.data(), head.size());
    dir.write("cut.h5", head);
  }
  H5E_auto2_t handler_before = nullptr;
  void* data_before = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &handler_before, &data_before);

  const std::string cut = error_of([&] { Hdf5File file(dir.file("cut.h5")); });
  EXPECT_TRUE(contains(cut, "cannot open HDF5 file '" + dir.file("cut.h5") + "' (HDF5: ")) << cut;
  EXPECT_EQ(cut.find('\n'), std::string::npos) << cut;
  const std::string directory = error_of([&] { Hdf5File file(dir.path()); });
  EXPECT_TRUE(contains(directory, "'" + dir.path() + "' is a directory")) << directory;

  H5E_auto2_t handler_after = nullptr;
  void* data_after = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &handler_after, &data_after);
  EXPECT_EQ(handler_after, handler_before);
  EXPECT_EQ(data_after, data_before);
}

TEST(Hdf5File, MovedFileStaysOpenOnce) {
  TempDir dir("hdf5");
  write_hdf5(dir.file("a.h5"), {{"x", {1}, {3}}});
  Hdf5File first(dir.file("a.h5"));
  Hdf5File second = std::move(first);
  std::vector<float> values;
  second.read_floats("x", &values);
  EXPECT_EQ(values, std::vector<float>{3});
  first = std::move(second);
  EXPECT_EQ(first.dataset_names(), std::vector<std::string>{"x"});
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

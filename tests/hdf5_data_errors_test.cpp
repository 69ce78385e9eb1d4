// HDF5Data's errors, each naming the layer, the list, the file and the
// dataset; and the Hdf5File reader on its own (listing, reading, damaged
// files, moves).
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
#include <utility>
#include <vector>

#include "data/hdf5_data_layer.hpp"
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
  expect_error([&] { layer.forward({}, tops.both()); },
               {"layer 'h5' (HDF5Data)",
                "in HDF5 file '" + dir.file("empty.h5") + "' dataset 'data' has 0 rows"});
}

// A damaged header can claim billions of values (the hdf5_data fuzzer found
// files asking for gigabytes): refused before anything that size is
// allocated, naming the file and the dataset.
TEST(Hdf5DataLayer, ADatasetClaimingMoreThanTheFileStoresIsRefusedBeforeAllocating) {
  TempDir dir("hdf5");
  const std::string path = dir.file("claims.h5");
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    for (const auto& [name, rank] : {std::pair<const char*, int>{"data", 2}, {"label", 1}}) {
      const hsize_t dims[2] = {30000, 30000};
      const hid_t space = H5Screate_simple(rank, dims, nullptr);
      const hid_t dataset =
          H5Dcreate2(file, name, H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      ASSERT_GE(dataset, 0);
      H5Dclose(dataset);
      H5Sclose(space);
    }
    H5Fclose(file);
  }
  std::vector<float> values;
  expect_error([&] { Hdf5File(path).read_floats("data", &values); },
               {"'data' in '" + path + "' claims 3600000000 bytes of values but the file stores 0",
                "write the file again, or remove it from the list"});
  EXPECT_TRUE(values.empty());
  // The layer reads it (in the child process that guards against HDF5's
  // crashes, then itself) and says so in its own words.
  const std::string message = setup_error(hdf5_param(dir.write("list.txt", path), 2));
  EXPECT_TRUE(contains(message, "layer 'h5' (HDF5Data)")) << message;
  EXPECT_TRUE(contains(message, "'data' in '" + path + "' claims 3600000000 bytes")) << message;
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

}  // namespace
}  // namespace xtrain

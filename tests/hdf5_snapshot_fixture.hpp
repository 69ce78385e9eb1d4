// The HDF5 snapshot tests' sample weights, checks and the HDF5 calls Caffe
// 1.0 writes with, shared by hdf5_snapshot_test.cpp and
// hdf5_snapshot_errors_test.cpp.
#pragma once

#include <gtest/gtest.h>
#include <hdf5.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/hdf5_snapshot.hpp"
#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace hdf5_snapshot_fixture {

using testing::TempDir;

inline BlobProto make_blob(const std::vector<std::int64_t>& shape, float first,
                           bool with_diff = false) {
  BlobProto blob;
  auto* dims = blob.mutable_shape();
  std::int64_t count = 1;
  for (std::int64_t d : shape) {
    dims->add_dim(d);
    count *= d;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    blob.add_data(first + 0.25f * static_cast<float>(i));
    if (with_diff) blob.add_diff(-first - 0.5f * static_cast<float>(i));
  }
  return blob;
}

inline LayerParameter* add_layer(NetParameter* net, const std::string& name,
                                 const std::vector<BlobProto>& blobs = {}) {
  LayerParameter* layer = net->add_layer();
  layer->set_name(name);
  layer->set_type("Test");  // not stored: the file keeps names and blobs only
  for (const BlobProto& blob : blobs) *layer->add_blobs() = blob;
  return layer;
}

// A small net: 4-d conv weights and 1-d bias, a layer without blobs, a 5-d
// blob, and a blob with no axes (one value).
inline NetParameter sample_net(bool with_diff) {
  NetParameter net;
  add_layer(&net, "conv1",
            {make_blob({2, 3, 2, 2}, 1.0f, with_diff), make_blob({2}, 7.0f, with_diff)});
  add_layer(&net, "relu1");
  add_layer(&net, "scale5d", {make_blob({1, 2, 3, 1, 2}, -3.0f, with_diff)});
  add_layer(&net, "scalar", {make_blob({}, 42.0f, with_diff)});
  return net;
}

inline std::vector<std::string> layer_names(const NetParameter& net) {
  std::vector<std::string> names;
  for (const LayerParameter& layer : net.layer()) names.push_back(layer.name());
  return names;
}

// Expects `actual` to hold `expected`'s layer names and blobs (shape, data,
// and diff if `with_diff`, else none).
inline void expect_same_weights(const NetParameter& expected, const NetParameter& actual,
                                bool with_diff) {
  ASSERT_EQ(layer_names(actual), layer_names(expected));
  for (int i = 0; i < expected.layer_size(); ++i) {
    const LayerParameter& want = expected.layer(i);
    const LayerParameter& got = actual.layer(i);
    ASSERT_EQ(got.blobs_size(), want.blobs_size()) << want.name();
    for (int j = 0; j < want.blobs_size(); ++j) {
      SCOPED_TRACE(want.name() + " blob " + std::to_string(j));
      EXPECT_TRUE(got.blobs(j).has_shape());
      EXPECT_EQ(got.blobs(j).shape().SerializeAsString(),
                want.blobs(j).shape().SerializeAsString());
      EXPECT_EQ(std::vector<float>(got.blobs(j).data().begin(), got.blobs(j).data().end()),
                std::vector<float>(want.blobs(j).data().begin(), want.blobs(j).data().end()));
      if (with_diff) {
        EXPECT_EQ(std::vector<float>(got.blobs(j).diff().begin(), got.blobs(j).diff().end()),
                  std::vector<float>(want.blobs(j).diff().begin(), want.blobs(j).diff().end()));
      } else {
        EXPECT_EQ(got.blobs(j).diff_size(), 0);
      }
    }
  }
}

using testing::error_of;
using testing::expect_error;

inline std::vector<std::string> files_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// --- The HDF5 C API, as Caffe 1.0 uses it (H5LT writes the same objects) ---

// Writes `data` (of HDF5 `type`, in `space`) as the dataset `name`; closes
// `space`.
inline void caffe_write_dataset(hid_t location, const char* name, hid_t type, hid_t space,
                                const void* data) {
  const hid_t dataset =
      H5Dcreate2(location, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  ASSERT_GE(H5Dwrite(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(dataset);
  H5Sclose(space);
}

inline void caffe_write_int(hid_t location, const char* name, int value) {
  const hsize_t one = 1;
  caffe_write_dataset(location, name, H5T_NATIVE_INT, H5Screate_simple(1, &one, nullptr), &value);
}

inline void caffe_write_string(hid_t location, const char* name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size() + 1);
  caffe_write_dataset(location, name, type, H5Screate(H5S_SCALAR), value.c_str());
  H5Tclose(type);
}

inline void caffe_write_floats(hid_t location, const char* name, const std::vector<hsize_t>& dims,
                               const std::vector<float>& values) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  caffe_write_dataset(location, name, H5T_NATIVE_FLOAT, space, values.data());
}

inline std::vector<float> ramp(std::size_t count, float first) {
  std::vector<float> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = first + static_cast<float>(i);
  return values;
}

// What one dataset of a file is: its type class, element size and dims.
struct DatasetLayout {
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t element_size = 0;
  H5S_class_t space_class = H5S_NO_CLASS;
  std::vector<hsize_t> dims;
};

inline DatasetLayout layout_of(const std::string& path, const std::string& dataset_path) {
  DatasetLayout layout;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0) << path;
  const hid_t dataset = H5Dopen2(file, dataset_path.c_str(), H5P_DEFAULT);
  EXPECT_GE(dataset, 0) << dataset_path;
  if (dataset >= 0) {
    const hid_t type = H5Dget_type(dataset);
    layout.type_class = H5Tget_class(type);
    layout.element_size = H5Tget_size(type);
    H5Tclose(type);
    const hid_t space = H5Dget_space(dataset);
    layout.space_class = H5Sget_simple_extent_type(space);
    layout.dims.resize(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)));
    H5Sget_simple_extent_dims(space, layout.dims.data(), nullptr);
    H5Sclose(space);
    H5Dclose(dataset);
  }
  H5Fclose(file);
  return layout;
}

}  // namespace hdf5_snapshot_fixture
}  // namespace xtrain

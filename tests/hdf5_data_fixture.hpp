// The HDF5Data tests' files (written with HDF5's C API, as h5py or Caffe's
// tools would), layer parameters and checks, shared by hdf5_data_layer_test.cpp
// and hdf5_data_errors_test.cpp.
#pragma once

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

#include "data/hdf5_data_layer.hpp"
#include "data/hdf5_file.hpp"
#include "data_layer_tops.hpp"
#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/layer_registry.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace hdf5_data_fixture {

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
inline void write_hdf5(const std::string& path, const std::vector<DatasetSpec>& datasets) {
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
inline double data_value(int file, int row, int j) { return 100.0 * file + 10.0 * row + j; }
inline double label_value(int file, int row) { return 10.0 * file + row; }

inline std::vector<DatasetSpec> numbered_file(int file, int rows,
                                              std::vector<hsize_t> row_dims = {2, 2},
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

inline LayerParameter hdf5_param(const std::string& source, int batch_size, bool shuffle = false,
                                 const std::string& tops = "top: 'data' top: 'label'") {
  LayerParameter param;
  read_proto_from_text_string("name: 'h5' type: 'HDF5Data' " + tops, &param);
  param.mutable_hdf5_data_param()->set_source(source);
  param.mutable_hdf5_data_param()->set_batch_size(batch_size);
  param.mutable_hdf5_data_param()->set_shuffle(shuffle);
  return param;
}

using Tops = testing::DataAndLabelTops;

using testing::error_of;
using testing::expect_error;

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// (file, row) of each batch item, checked against both tops.
inline void expect_rows(const Tops& tops, const std::vector<std::pair<int, int>>& rows,
                        int row_size) {
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

}  // namespace hdf5_data_fixture
}  // namespace xtrain

// An HDF5Data file whose reading crashes inside the HDF5 library ends in an
// error naming the layer, the list and the file, and the process lives on
// (each listed file is read first in a child process, the first time it is
// needed: src/core/hdf5_crash_isolation.hpp).
//
// What crashes HDF5 in the wild is damaged metadata it trusts; here the
// crash is made certain by a filter of our own that faults while decoding,
// registered in this process (and so in its children) before the file is
// written through it.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <csignal>
#include <string>
#include <vector>

#include "data/hdf5_data_layer.hpp"
#include "error_message.hpp"
#include "tool_runner.hpp"
#include "xtrain/error.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

using testing::TempDir;

// HDF5 keeps filter ids 256-511 for testing.
constexpr H5Z_filter_t kFaultingFilter = 300;

std::size_t fault_when_decoding(unsigned int flags, std::size_t, const unsigned int[],
                                std::size_t bytes, std::size_t*, void**) {
  if ((flags & H5Z_FLAG_REVERSE) != 0) std::raise(SIGSEGV);  // reading
  return bytes;                                              // writing: stored as given
}

void register_faulting_filter() {
  static const H5Z_class2_t filter = {
      H5Z_CLASS_T_VERS, kFaultingFilter,    1, 1, "faults when decoding (test)", nullptr,
      nullptr,          fault_when_decoding};
  ASSERT_GE(H5Zregister(&filter), 0);
}

// "data" (rows x 2) and "label" (rows); `faulting` puts "data" through the
// faulting filter.
void write_file(const std::string& path, hsize_t rows, bool faulting) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  const std::vector<float> values(rows * 2, 0.5f);
  for (const char* name : {"data", "label"}) {
    const bool data = std::string(name) == "data";
    const hsize_t dims[2] = {rows, 2};
    const hid_t space = H5Screate_simple(data ? 2 : 1, dims, nullptr);
    const hid_t create = H5Pcreate(H5P_DATASET_CREATE);
    if (data && faulting) {
      ASSERT_GE(H5Pset_chunk(create, 2, dims), 0);
      ASSERT_GE(H5Pset_filter(create, kFaultingFilter, H5Z_FLAG_MANDATORY, 0, nullptr), 0);
    }
    const hid_t set =
        H5Dcreate2(file, name, H5T_IEEE_F32LE, space, H5P_DEFAULT, create, H5P_DEFAULT);
    ASSERT_GE(set, 0);
    ASSERT_GE(H5Dwrite(set, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
    H5Dclose(set);
    H5Pclose(create);
    H5Sclose(space);
  }
  H5Fclose(file);
}

LayerParameter hdf5_param(const std::string& source) {
  LayerParameter param;
  read_proto_from_text_string("name: 'h5' type: 'HDF5Data' top: 'data' top: 'label'", &param);
  param.mutable_hdf5_data_param()->set_source(source);
  param.mutable_hdf5_data_param()->set_batch_size(2);
  return param;
}

using testing::error_of;

void expect_crash_reported(const std::string& message, const std::string& list,
                           const std::string& file) {
  EXPECT_NE(message.find("layer 'h5' (HDF5Data), source '" + list + "': HDF5 file '" + file +
                         "' is damaged: the HDF5 library crashed reading it (signal 11"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("write the file again, or remove it from the list"), std::string::npos)
      << message;
}

TEST(Hdf5DataCrash, AFileThatCrashesHdf5IsAnErrorAtSetup) {
  register_faulting_filter();
  TempDir dir("hdf5_crash");
  const std::string bad = dir.file("bad.h5");
  write_file(bad, 3, /*faulting=*/true);
  const std::string list = dir.write("list.txt", bad + "\n");
  Hdf5DataLayer layer(hdf5_param(list));
  Blob data, label;
  expect_crash_reported(error_of([&] { layer.setup({}, {&data, &label}); }), list, bad);
}

TEST(Hdf5DataCrash, AFileThatCrashesHdf5IsAnErrorWhenItIsReached) {
  register_faulting_filter();
  TempDir dir("hdf5_crash");
  const std::string good = dir.file("good.h5");
  const std::string bad = dir.file("bad.h5");
  write_file(good, 2, /*faulting=*/false);
  write_file(bad, 2, /*faulting=*/true);
  const std::string list = dir.write("list.txt", good + "\n" + bad + "\n");
  Hdf5DataLayer layer(hdf5_param(list));
  Blob data, label;
  layer.setup({}, {&data, &label});
  // The good file's two rows fill the batch; the forward then moves on to
  // the bad file, which is read (first in a child) and crashes HDF5 there.
  const std::string message = error_of([&] { layer.forward({}, {&data, &label}); });
  expect_crash_reported(message, list, bad);
}

}  // namespace
}  // namespace xtrain

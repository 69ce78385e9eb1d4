// A read-only HDF5 file and the float datasets in it (HDF5 1.10 C API).
//
// What the HDF5Data layer needs, and no more: open a file, list the datasets
// of its root group, and read one dataset, whatever its numeric type (float,
// double or integer; HDF5 converts on read to native float), with its dims.
//
// HDF5 prints its own error stack to stderr when a call fails. This wrapper
// switches that off around each of its calls (restoring the caller's setting
// afterwards) and throws xtrain::Error instead, naming the file, the dataset
// and HDF5's own innermost reason.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace xtrain {

class Hdf5File {
 public:
  // Throws xtrain::Error if `path` does not exist, is not an HDF5 file, or
  // cannot be opened.
  explicit Hdf5File(const std::string& path);
  ~Hdf5File();
  Hdf5File(Hdf5File&& other) noexcept;
  Hdf5File& operator=(Hdf5File&& other) noexcept;
  Hdf5File(const Hdf5File&) = delete;
  Hdf5File& operator=(const Hdf5File&) = delete;

  const std::string& path() const { return path_; }

  // Names of the datasets directly in the root group, in name order.
  std::vector<std::string> dataset_names() const;
  // Whether `name` (a path relative to the root, e.g. "data" or "g/data")
  // is a dataset.
  bool has_dataset(const std::string& name) const;
  // The extent of each axis. Throws xtrain::Error if there is no such dataset,
  // it is a scalar (0 axes), or an axis exceeds INT_MAX.
  std::vector<int> dataset_dims(const std::string& name) const;
  // Reads the whole dataset, converted to float, into *values (resized to the
  // product of the dims; its capacity is reused) and returns its dims.
  // Throws xtrain::Error naming the file and dataset if the dataset is missing,
  // not numeric (strings, compounds, ...), or unreadable.
  std::vector<int> read_floats(const std::string& name, std::vector<float>* values) const;

 private:
  std::string path_;
  std::int64_t id_ = -1;  // the hid_t of the open file; -1 once moved from
};

}  // namespace xtrain

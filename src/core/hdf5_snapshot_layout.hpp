// What the writer and the reader of Caffe's HDF5 snapshot layout share
// (see hdf5_snapshot.hpp for the layout itself).
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

namespace xtrain::hdf5_layout {

// The dataset holding xtrain's ResumeState (serialized) in a .solverstate.h5;
// Caffe ignores datasets it does not know.
constexpr const char* kResumeDataset = "xtrain_resume";

inline std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + ")";
}

// The blob index a dataset name stands for ("0", "1", ...), or -1.
inline int blob_index(const std::string& name) {
  if (name.empty() || name.size() > 6 || (name.size() > 1 && name[0] == '0')) return -1;
  if (name.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(name);
}

}  // namespace xtrain::hdf5_layout

// The writing half of Caffe's HDF5 snapshot layout (hdf5_snapshot.hpp).
#include <hdf5.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/hdf5_handle.hpp"
#include "core/hdf5_memory_file.hpp"
#include "core/hdf5_snapshot.hpp"
#include "core/hdf5_snapshot_layout.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

using namespace hdf5_layout;

// Group creation properties that make HDF5 remember the order links were
// made in, so layers read back in net order rather than name order.
Hdf5Handle ordered_group_properties(const std::string& path) {
  Hdf5Handle properties(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  XTRAIN_CHECK(properties.valid() &&
                   H5Pset_link_creation_order(properties.get(),
                                              H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) >= 0,
               "cannot write '", path, "'", hdf5_reason());
  return properties;
}

// Checks that every layer has a name usable as an HDF5 group path, and that
// no two layers share one (Caffe crashes on both).
void check_layer_names(const NetParameter& weights, const std::string& path) {
  std::unordered_map<std::string, int> first_index;
  for (int i = 0; i < weights.layer_size(); ++i) {
    const std::string& name = weights.layer(i).name();
    XTRAIN_CHECK(!name.empty(), "cannot write '", path, "': layer ", i,
                 " has no name, and an HDF5 snapshot stores each layer's blobs under its name");
    XTRAIN_CHECK(name.front() != '/' && name.back() != '/' &&
                     name.find("//") == std::string::npos && name != "." &&
                     name.rfind("./", 0) != 0 && name.find("/./") == std::string::npos &&
                     (name.size() < 2 || name.compare(name.size() - 2, 2, "/.") != 0),
                 "cannot write '", path, "': layer name '", name,
                 "' is not usable as an HDF5 group path (it has an empty or '.' part between "
                 "slashes); rename the layer or use snapshot_format: BINARYPROTO");
    const auto [existing, inserted] = first_index.emplace(name, i);
    XTRAIN_CHECK(inserted, "cannot write '", path, "': layers ", existing->second, " and ", i,
                 " are both named '", name,
                 "', and an HDF5 snapshot stores each layer's blobs under its name; give the "
                 "layers unique names");
  }
  // Layer "conv1/0" would be stored at data/conv1/0, where blob 0 of "conv1" is.
  for (const LayerParameter& layer : weights.layer()) {
    const std::size_t slash = layer.name().rfind('/');
    if (slash == std::string::npos) continue;
    const int index = blob_index(layer.name().substr(slash + 1));
    const auto owner = first_index.find(layer.name().substr(0, slash));
    if (index < 0 || owner == first_index.end()) continue;
    XTRAIN_CHECK(weights.layer(owner->second).blobs_size() <= index, "cannot write '", path,
                 "': layer '", layer.name(), "' would be stored where blob ", index, " of layer '",
                 owner->first, "' is; rename one of the two layers");
  }
}

// Opens the group at `layer_name` under `root`, creating it and any missing
// groups on the way ("conv1" for "conv1/7x7_s2") with creation order tracked.
Hdf5Handle open_or_create_layer_group(hid_t root, const std::string& layer_name,
                                      hid_t group_properties, const std::string& path) {
  Hdf5Handle group(H5Gopen2(root, ".", H5P_DEFAULT), H5Gclose);
  XTRAIN_CHECK(group.valid(), "cannot write '", path, "'", hdf5_reason());
  std::size_t start = 0;
  while (start <= layer_name.size()) {
    std::size_t slash = layer_name.find('/', start);
    if (slash == std::string::npos) slash = layer_name.size();
    const std::string part = layer_name.substr(start, slash - start);
    const hid_t next =
        H5Lexists(group.get(), part.c_str(), H5P_DEFAULT) > 0
            ? H5Gopen2(group.get(), part.c_str(), H5P_DEFAULT)
            : H5Gcreate2(group.get(), part.c_str(), H5P_DEFAULT, group_properties, H5P_DEFAULT);
    XTRAIN_CHECK(next >= 0, "cannot write the group of layer '", layer_name, "' to '", path, "'",
                 hdf5_reason());
    group = Hdf5Handle(next, H5Gclose);
    start = slash + 1;
  }
  return group;
}

// The values of one blob part (data or diff) and the dims to store them with.
struct BlobValues {
  std::vector<hsize_t> dims;
  const void* values = nullptr;  // float or double, per `is_double`
  bool is_double = false;
  std::uint64_t count = 0;
};

// A blob's shape: `shape`, else the legacy 4-d fields, else 1-d from its
// values. Returns false for a gap (no shape and no values at all).
bool blob_dims(const BlobProto& blob, const std::string& where, const std::string& path,
               std::vector<hsize_t>* dims) {
  std::vector<std::int64_t> axes;
  if (blob.has_shape()) {
    axes.assign(blob.shape().dim().begin(), blob.shape().dim().end());
  } else if (blob.has_num() || blob.has_channels() || blob.has_height() || blob.has_width()) {
    axes = {blob.num(), blob.channels(), blob.height(), blob.width()};
  } else {
    const int values = std::max(
        {blob.data_size(), blob.double_data_size(), blob.diff_size(), blob.double_diff_size()});
    if (values == 0) return false;
    axes = {values};
  }
  dims->clear();
  for (std::int64_t axis : axes) {
    XTRAIN_CHECK(axis >= 0, "cannot write ", where, " to '", path, "': its shape has axis ", axis);
    dims->push_back(static_cast<hsize_t>(axis));
  }
  return true;
}

BlobValues blob_values(const BlobProto& blob, const std::vector<hsize_t>& dims, bool diff,
                       const std::string& where, const std::string& path) {
  std::uint64_t count = 1;
  for (hsize_t d : dims) {
    XTRAIN_CHECK(d == 0 || count <= UINT64_MAX / d, "cannot write ", where, " to '", path,
                 "': its shape ", shape_text(dims), " is too large");
    count *= d;
  }
  const auto& floats = diff ? blob.diff() : blob.data();
  const auto& doubles = diff ? blob.double_diff() : blob.double_data();
  BlobValues result{dims, floats.data(), false, count};
  std::uint64_t held = static_cast<std::uint64_t>(floats.size());
  if (floats.empty() && !doubles.empty()) {
    result = {dims, doubles.data(), true, count};
    held = static_cast<std::uint64_t>(doubles.size());
  }
  XTRAIN_CHECK(held == count, "cannot write ", where, " to '", path, "': its shape ",
               shape_text(dims), " needs ", count, " values but it holds ", held,
               diff && held == 0 ? " (a snapshot with diffs needs every blob's diff)" : "");
  return result;
}

// A blob that has a shape with values but holds no data: the placeholder
// read_net_hdf5 gives for a weight-shared blob whose data Caffe left out.
bool is_data_gap(const BlobProto& blob, const std::vector<hsize_t>& dims) {
  return blob.data_size() == 0 && blob.double_data_size() == 0 &&
         std::find(dims.begin(), dims.end(), hsize_t{0}) == dims.end();
}

void write_blob_dataset(hid_t group, const std::string& name, const BlobValues& blob,
                        const std::string& where, const std::string& path) {
  // A blob with no axes holds one value; HDF5 calls that a scalar dataspace.
  Hdf5Handle space(blob.dims.empty() ? H5Screate(H5S_SCALAR)
                                     : H5Screate_simple(static_cast<int>(blob.dims.size()),
                                                        blob.dims.data(), nullptr),
                   H5Sclose);
  XTRAIN_CHECK(space.valid(), "cannot write ", where, " to '", path, "'", hdf5_reason());
  const hid_t file_type = blob.is_double ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
  const hid_t memory_type = blob.is_double ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
  Hdf5Handle dataset(H5Dcreate2(group, name.c_str(), file_type, space.get(), H5P_DEFAULT,
                                H5P_DEFAULT, H5P_DEFAULT),
                     H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot write ", where, " to '", path, "'", hdf5_reason());
  // HDF5 rejects a null buffer even when there is nothing to write.
  if (blob.count == 0) return;
  XTRAIN_CHECK(
      H5Dwrite(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob.values) >= 0,
      "cannot write ", where, " to '", path, "'", hdf5_reason());
}

void write_layers(hid_t file, const NetParameter& weights, bool diff, const std::string& path) {
  const char* root_name = diff ? "diff" : "data";
  const Hdf5Handle group_properties = ordered_group_properties(path);
  Hdf5Handle root(H5Gcreate2(file, root_name, H5P_DEFAULT, group_properties.get(), H5P_DEFAULT),
                  H5Gclose);
  XTRAIN_CHECK(root.valid(), "cannot write group '", root_name, "' to '", path, "'", hdf5_reason());
  for (const LayerParameter& layer : weights.layer()) {
    Hdf5Handle layer_group =
        open_or_create_layer_group(root.get(), layer.name(), group_properties.get(), path);
    for (int j = 0; j < layer.blobs_size(); ++j) {
      std::vector<hsize_t> dims;
      const std::string where = std::string(diff ? "the diff of " : "") + "blob " +
                                std::to_string(j) + " of layer '" + layer.name() + "'";
      if (!blob_dims(layer.blobs(j), where, path, &dims)) continue;
      if (!diff && is_data_gap(layer.blobs(j), dims)) continue;
      write_blob_dataset(layer_group.get(), std::to_string(j),
                         blob_values(layer.blobs(j), dims, diff, where, path), where, path);
    }
  }
}

void write_int(hid_t file, const char* name, int value, const std::string& path) {
  const hsize_t one = 1;  // Caffe stores its counters as 1-element arrays
  Hdf5Handle space(H5Screate_simple(1, &one, nullptr), H5Sclose);
  Hdf5Handle dataset(space.valid() ? H5Dcreate2(file, name, H5T_NATIVE_INT, space.get(),
                                                H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                                   : -1,
                     H5Dclose);
  XTRAIN_CHECK(dataset.valid() && H5Dwrite(dataset.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL,
                                           H5P_DEFAULT, &value) >= 0,
               "cannot write '", name, "' to '", path, "'", hdf5_reason());
}

// A scalar, fixed-length, NUL-terminated string, as Caffe writes "learned_net".
void write_string(hid_t file, const char* name, const std::string& value, const std::string& path) {
  Hdf5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  Hdf5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  XTRAIN_CHECK(type.valid() && space.valid() && H5Tset_size(type.get(), value.size() + 1) >= 0,
               "cannot write '", name, "' to '", path, "'", hdf5_reason());
  Hdf5Handle dataset(
      H5Dcreate2(file, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  XTRAIN_CHECK(dataset.valid() && H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                           value.c_str()) >= 0,
               "cannot write '", name, "' to '", path, "'", hdf5_reason());
}

void write_bytes(hid_t file, const char* name, const std::string& bytes, const std::string& path) {
  const hsize_t size = bytes.size();
  Hdf5Handle space(H5Screate_simple(1, &size, nullptr), H5Sclose);
  Hdf5Handle dataset(space.valid() ? H5Dcreate2(file, name, H5T_STD_U8LE, space.get(), H5P_DEFAULT,
                                                H5P_DEFAULT, H5P_DEFAULT)
                                   : -1,
                     H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot write '", name, "' to '", path, "'", hdf5_reason());
  if (bytes.empty()) return;
  XTRAIN_CHECK(
      H5Dwrite(dataset.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0,
      "cannot write '", name, "' to '", path, "'", hdf5_reason());
}

// Builds the file in memory with `fill`, then writes it to `path` atomically.
template <typename Fill>
void write_hdf5_atomically(const std::string& path, const Fill& fill) {
  Hdf5MemoryFile file(path);
  {
    QuietHdf5Errors quiet;
    fill(file.id());
  }
  file.save();
}

}  // namespace

void write_net_hdf5(const NetParameter& weights, const std::string& path, bool write_diff) {
  check_layer_names(weights, path);
  write_hdf5_atomically(path, [&](hid_t file) {
    write_layers(file, weights, /*diff=*/false, path);
    if (write_diff) write_layers(file, weights, /*diff=*/true, path);
  });
}

void write_solver_state_hdf5(const SolverState& state, const std::string& path) {
  std::string resume_bytes;
  if (state.has_resume()) {
    XTRAIN_CHECK(state.resume().SerializeToString(&resume_bytes), "cannot write '", path,
                 "': the resume state does not serialize");
  }
  write_hdf5_atomically(path, [&](hid_t file) {
    write_int(file, "iter", state.iter(), path);
    if (state.has_learned_net()) write_string(file, "learned_net", state.learned_net(), path);
    write_int(file, "current_step", state.current_step(), path);
    Hdf5Handle history(H5Gcreate2(file, "history", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                       H5Gclose);
    XTRAIN_CHECK(history.valid(), "cannot write group 'history' to '", path, "'", hdf5_reason());
    for (int i = 0; i < state.history_size(); ++i) {
      const std::string where = "history blob " + std::to_string(i);
      std::vector<hsize_t> dims;
      XTRAIN_CHECK(blob_dims(state.history(i), where, path, &dims), "cannot write '", path,
                   "': ", where, " has neither a shape nor values");
      write_blob_dataset(history.get(), std::to_string(i),
                         blob_values(state.history(i), dims, /*diff=*/false, where, path), where,
                         path);
    }
    if (state.has_resume()) write_bytes(file, kResumeDataset, resume_bytes, path);
  });
}

}  // namespace xtrain

// The reading half of Caffe's HDF5 snapshot layout (hdf5_snapshot.hpp).
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
#include "core/hdf5_crash_isolation.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

constexpr const char* kUseAnEarlierSnapshot = "use an earlier snapshot";

using namespace hdf5_layout;

// What to do about a snapshot HDF5 cannot read without crashing.
constexpr const char* kUseAnotherSnapshot = "use an earlier snapshot or write the file again";

Hdf5Handle open_for_reading(const std::string& path, const char* kind) {
  std::error_code ignored;
  XTRAIN_CHECK(std::filesystem::exists(path, ignored), "cannot read ", kind, " '", path,
               "': no such file");
  XTRAIN_CHECK(!std::filesystem::is_directory(path, ignored), "cannot read ", kind, " '", path,
               "': it is a directory");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  XTRAIN_CHECK(is_hdf5 >= 0, "cannot read ", kind, " '", path, "'", hdf5_reason());
  XTRAIN_CHECK(is_hdf5 > 0, "'", path,
               "' is not an HDF5 file (it lacks the HDF5 signature), so it ", "is not a ", kind);
  Hdf5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  XTRAIN_CHECK(file.valid(), "cannot open HDF5 file '", path, "'; it may be truncated or damaged",
               hdf5_reason());
  return file;
}

// Opens the object `name` in `parent` if it exists and has the given type.
Hdf5Handle open_if(hid_t parent, const std::string& name, H5I_type_t type) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) return Hdf5Handle(-1, H5Oclose);
  Hdf5Handle object(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (object.valid() && H5Iget_type(object.get()) != type) return Hdf5Handle(-1, H5Oclose);
  return object;
}

herr_t collect_link_name(hid_t, const char* name, const H5L_info_t*, void* names) {
  static_cast<std::vector<std::string>*>(names)->push_back(name);
  return 0;
}

// The names of the links in `group`, in creation order if the group tracked
// it, else in name order.
std::vector<std::string> link_names(hid_t group, const std::string& where,
                                    const std::string& path) {
  std::vector<std::string> names;
  unsigned order_flags = 0;
  Hdf5Handle properties(H5Gget_create_plist(group), H5Pclose);
  if (properties.valid() && H5Pget_link_creation_order(properties.get(), &order_flags) >= 0 &&
      (order_flags & H5P_CRT_ORDER_TRACKED) != 0) {
    hsize_t position = 0;
    if (H5Literate(group, H5_INDEX_CRT_ORDER, H5_ITER_INC, &position, collect_link_name, &names) >=
        0) {
      return names;
    }
    names.clear();
  }
  hsize_t position = 0;
  XTRAIN_CHECK(
      H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &position, collect_link_name, &names) >= 0,
      "cannot list group '", where, "' of '", path, "'", hdf5_reason());
  return names;
}

// The dims of a dataset's dataspace (none for a scalar).
std::vector<hsize_t> dataset_dims(hid_t dataset, const std::string& where,
                                  const std::string& path) {
  Hdf5Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  XTRAIN_CHECK(rank >= 0, "cannot read the shape of '", where, "' in '", path, "'", hdf5_reason());
  XTRAIN_CHECK(H5Sget_simple_extent_type(space.get()) != H5S_NULL, "'", where, "' in '", path,
               "' has no dataspace (an empty dataset); expected an array of values");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

// Reads the numeric dataset `name` of `group` into a fresh blob: its shape,
// and its values as data or diff (double for 64-bit floats, else float).
BlobProto read_blob(hid_t group, const std::string& name, bool diff, const std::string& where,
                    const std::string& path) {
  Hdf5Handle dataset(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot read '", where, "' in '", path, "'", hdf5_reason());
  const std::vector<hsize_t> dims = dataset_dims(dataset.get(), where, path);
  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  XTRAIN_CHECK(type_class == H5T_FLOAT || type_class == H5T_INTEGER, "'", where, "' in '", path,
               "' does not hold numbers; a blob dataset must hold float values");
  const bool is_double = type_class == H5T_FLOAT && H5Tget_size(type.get()) > sizeof(float);

  BlobProto blob;
  std::uint64_t count = 1;
  for (hsize_t d : dims) {
    blob.mutable_shape()->add_dim(static_cast<std::int64_t>(d));
    count = d == 0 || count <= UINT64_MAX / d ? count * d : UINT64_MAX;
  }
  if (dims.empty()) blob.mutable_shape();  // a blob with no axes still has a shape
  XTRAIN_CHECK(count <= static_cast<std::uint64_t>(INT_MAX), "'", where, "' in '", path,
               "' has shape ", shape_text(dims),
               "; a blob of more than 2^31-1 values does not fit xtrain's BlobProto");
  const int size = static_cast<int>(count);
  check_stored_size(dataset.get(), count * std::min<std::size_t>(H5Tget_size(type.get()), 16),
                    where, path, kUseAnEarlierSnapshot);
  void* values = nullptr;
  if (is_double) {
    auto* field = diff ? blob.mutable_double_diff() : blob.mutable_double_data();
    field->Resize(size, 0.0);
    values = field->mutable_data();
  } else {
    auto* field = diff ? blob.mutable_diff() : blob.mutable_data();
    field->Resize(size, 0.0f);
    values = field->mutable_data();
  }
  if (size == 0) return blob;
  XTRAIN_CHECK(H5Dread(dataset.get(), is_double ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT, H5S_ALL,
                       H5S_ALL, H5P_DEFAULT, values) >= 0,
               "cannot read '", where, "' in '", path, "'; the file may be truncated or damaged",
               hdf5_reason());
  return blob;
}

// Appends the layer stored in `group` (if it is one) and the layers nested
// under it to `net`. A group is a layer if it holds blob datasets, or holds
// nothing (a layer without blobs); its subgroups are layers named
// "<name>/<subgroup>".
void read_layer_group(hid_t group, const std::string& layer_name, const std::string& root_name,
                      bool diff, const std::string& path, NetParameter* net) {
  const std::string where = root_name + "/" + layer_name;
  std::map<int, std::string> blob_names;
  std::vector<std::string> subgroups;
  for (const std::string& name : link_names(group, where, path)) {
    if (open_if(group, name, H5I_GROUP).valid()) {
      subgroups.push_back(name);
    } else if (blob_index(name) >= 0 && open_if(group, name, H5I_DATASET).valid()) {
      blob_names.emplace(blob_index(name), name);
    }
  }
  if (!blob_names.empty() || subgroups.empty()) {
    LayerParameter* layer = net->add_layer();
    layer->set_name(layer_name);
    for (const auto& [index, name] : blob_names) {
      while (layer->blobs_size() < index) layer->add_blobs();  // a gap: a shared blob
      *layer->add_blobs() = read_blob(group, name, diff, where + "/" + name, path);
    }
  }
  for (const std::string& name : subgroups) {
    Hdf5Handle subgroup(H5Gopen2(group, name.c_str(), H5P_DEFAULT), H5Gclose);
    XTRAIN_CHECK(subgroup.valid(), "cannot open '", where, "/", name, "' in '", path, "'",
                 hdf5_reason());
    read_layer_group(subgroup.get(), layer_name + "/" + name, root_name, diff, path, net);
  }
}

NetParameter read_layers(hid_t root, const std::string& root_name, bool diff,
                         const std::string& path) {
  NetParameter net;
  for (const std::string& name : link_names(root, root_name, path)) {
    Hdf5Handle group = open_if(root, name, H5I_GROUP);
    if (group.valid()) read_layer_group(group.get(), name, root_name, diff, path, &net);
  }
  return net;
}

// Moves the diffs read from the "diff" group onto the matching blobs of
// `net`, checking that each diff has its blob's shape.
void merge_diffs(NetParameter&& diffs, const std::string& path, NetParameter* net) {
  std::unordered_map<std::string, LayerParameter*> layers;
  for (LayerParameter& layer : *net->mutable_layer()) layers.emplace(layer.name(), &layer);
  for (LayerParameter& diff_layer : *diffs.mutable_layer()) {
    auto found = layers.find(diff_layer.name());
    if (found == layers.end()) {
      *net->add_layer() = std::move(diff_layer);
      continue;
    }
    LayerParameter* layer = found->second;
    for (int j = 0; j < diff_layer.blobs_size(); ++j) {
      BlobProto& diff = *diff_layer.mutable_blobs(j);
      if (!diff.has_shape()) continue;
      while (layer->blobs_size() <= j) layer->add_blobs();
      BlobProto& blob = *layer->mutable_blobs(j);
      if (!blob.has_shape()) {
        *blob.mutable_shape() = diff.shape();
      } else {
        XTRAIN_CHECK(blob.shape().SerializeAsString() == diff.shape().SerializeAsString(), "'",
                     path, "' is damaged: 'diff/", layer->name(), "/", j,
                     "' has a different shape from 'data/", layer->name(), "/", j, "'");
      }
      blob.mutable_diff()->Swap(diff.mutable_diff());
      blob.mutable_double_diff()->Swap(diff.mutable_double_diff());
    }
  }
}

// A dataset of the snapshot, by name, with its shape and stored type; an
// error names it when it is missing or cannot be read.
struct NamedDataset {
  Hdf5Handle dataset;
  std::vector<hsize_t> dims;
  Hdf5Handle type;
  const char* name;
  const std::string& path;

  bool holds_one_value() const {
    return std::all_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 1; });
  }

  // All of it, converted to `memory_type`, into `buffer`.
  void read(hid_t memory_type, void* buffer) const {
    XTRAIN_CHECK(H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer) >= 0,
                 "cannot read '", name, "' in '", path, "'", hdf5_reason());
  }
};

NamedDataset open_dataset(hid_t file, const char* name, const std::string& path) {
  Hdf5Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot read '", name, "' in '", path, "'", hdf5_reason());
  std::vector<hsize_t> dims = dataset_dims(dataset.get(), name, path);
  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  return {std::move(dataset), std::move(dims), std::move(type), name, path};
}

int read_int(hid_t file, const char* name, const std::string& path) {
  const NamedDataset stored = open_dataset(file, name, path);
  const H5T_class_t type_class =
      stored.type.valid() ? H5Tget_class(stored.type.get()) : H5T_NO_CLASS;
  XTRAIN_CHECK((type_class == H5T_INTEGER || type_class == H5T_FLOAT) && stored.holds_one_value(),
               "'", name, "' in '", path, "' should be one integer, but it holds ",
               type_class == H5T_INTEGER || type_class == H5T_FLOAT ? "an array of shape "
                                                                    : "non-numbers of shape ",
               shape_text(stored.dims));
  int value = 0;
  stored.read(H5T_NATIVE_INT, &value);
  return value;
}

// Reads a scalar string, fixed-length (Caffe) or variable-length (h5py).
std::string read_string(hid_t file, const char* name, const std::string& path) {
  const NamedDataset stored = open_dataset(file, name, path);
  const hid_t type = stored.type.get();
  XTRAIN_CHECK(stored.type.valid() && H5Tget_class(type) == H5T_STRING && stored.holds_one_value(),
               "'", name, "' in '", path, "' should be one string");
  if (H5Tis_variable_str(type) > 0) {
    char* text = nullptr;
    stored.read(type, &text);
    std::string value = text ? text : "";
    Hdf5Handle space(H5Dget_space(stored.dataset.get()), H5Sclose);
    H5Dvlen_reclaim(type, space.get(), H5P_DEFAULT, &text);
    return value;
  }
  // Read with the file's own type (no conversion), plus a NUL of our own in
  // case the string fills its whole width.
  check_stored_size(stored.dataset.get(), H5Tget_size(type), name, path, kUseAnEarlierSnapshot);
  std::vector<char> text(H5Tget_size(type) + 1, '\0');
  stored.read(type, text.data());
  std::string value(text.data());
  if (H5Tget_strpad(type) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);
  }
  return value;
}

std::string read_bytes(hid_t file, const char* name, const std::string& path) {
  const NamedDataset stored = open_dataset(file, name, path);
  const hid_t type = stored.type.get();
  XTRAIN_CHECK(stored.type.valid() && H5Tget_class(type) == H5T_INTEGER && H5Tget_size(type) == 1 &&
                   stored.dims.size() == 1,
               "'", name, "' in '", path, "' should be a 1-d array of bytes");
  check_stored_size(stored.dataset.get(), stored.dims[0], name, path, kUseAnEarlierSnapshot);
  std::string bytes(stored.dims[0], '\0');
  if (bytes.empty()) return bytes;
  stored.read(H5T_NATIVE_UCHAR, bytes.data());
  return bytes;
}

NetParameter read_net_hdf5_here(const std::string& path) {
  QuietHdf5Errors quiet;
  Hdf5Handle file = open_for_reading(path, "Caffe .caffemodel.h5");
  Hdf5Handle data = open_if(file.get(), "data", H5I_GROUP);
  XTRAIN_CHECK(data.valid(), "'", path,
               "' is an HDF5 file but not a Caffe .caffemodel.h5: it has no group 'data' "
               "(expected 'data/<layer name>/0', '1', ... holding each layer's blobs)");
  NetParameter net = read_layers(data.get(), "data", /*diff=*/false, path);
  Hdf5Handle diff = open_if(file.get(), "diff", H5I_GROUP);
  if (diff.valid()) merge_diffs(read_layers(diff.get(), "diff", /*diff=*/true, path), path, &net);
  return net;
}

SolverState read_solver_state_hdf5_here(const std::string& path) {
  QuietHdf5Errors quiet;
  Hdf5Handle file = open_for_reading(path, "Caffe .solverstate.h5");
  XTRAIN_CHECK(open_if(file.get(), "iter", H5I_DATASET).valid(), "'", path,
               "' is an HDF5 file but not a Caffe .solverstate.h5: it has no dataset 'iter' "
               "(expected 'iter', 'current_step', 'learned_net' and group 'history')");
  Hdf5Handle history = open_if(file.get(), "history", H5I_GROUP);
  XTRAIN_CHECK(history.valid(), "'", path,
               "' is an HDF5 file but not a Caffe .solverstate.h5: it has no group 'history' "
               "(expected datasets 'history/0', '1', ... holding the solver's history blobs)");
  SolverState state;
  state.set_iter(read_int(file.get(), "iter", path));
  if (open_if(file.get(), "current_step", H5I_DATASET).valid()) {
    state.set_current_step(read_int(file.get(), "current_step", path));
  }
  if (open_if(file.get(), "learned_net", H5I_DATASET).valid()) {
    state.set_learned_net(read_string(file.get(), "learned_net", path));
  }
  const std::size_t entries = link_names(history.get(), "history", path).size();
  for (std::size_t i = 0; i < entries; ++i) {
    const std::string name = std::to_string(i);
    XTRAIN_CHECK(open_if(history.get(), name, H5I_DATASET).valid(), "'", path,
                 "' is damaged: group 'history' has ", entries, " entries but no dataset 'history/",
                 name, "' (expected datasets '0' .. '", entries - 1, "')");
    *state.add_history() = read_blob(history.get(), name, /*diff=*/false, "history/" + name, path);
  }
  if (open_if(file.get(), kResumeDataset, H5I_DATASET).valid()) {
    XTRAIN_CHECK(
        state.mutable_resume()->ParseFromString(read_bytes(file.get(), kResumeDataset, path)), "'",
        path, "' is damaged: its '", kResumeDataset, "' dataset is not xtrain's resume state");
  }
  return state;
}

}  // namespace

// Each read is tried in a child process first (core/hdf5_crash_isolation.hpp).
NetParameter read_net_hdf5(const std::string& path) {
  survive_hdf5_read(path, "the .caffemodel.h5", kUseAnotherSnapshot, [&] { (void)read_net_hdf5_here(path); });
  return read_net_hdf5_here(path);
}

SolverState read_solver_state_hdf5(const std::string& path) {
  survive_hdf5_read(path, "the .solverstate.h5", kUseAnotherSnapshot, [&] { (void)read_solver_state_hdf5_here(path); });
  return read_solver_state_hdf5_here(path);
}

bool looks_like_hdf5(const std::string& path) {
  static const char kSignature[8] = {'\211', 'H', 'D', 'F', '\r', '\n', '\032', '\n'};
  std::error_code ignored;
  if (!std::filesystem::is_regular_file(path, ignored)) return false;
  char start[sizeof kSignature] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in.read(start, sizeof start)) return false;
  if (std::memcmp(start, kSignature, sizeof kSignature) == 0) return true;
  // The superblock may also follow a user block, at 512, 1024, 2048, ... bytes.
  QuietHdf5Errors quiet;
  return H5Fis_hdf5(path.c_str()) > 0;
}

}  // namespace xtrain

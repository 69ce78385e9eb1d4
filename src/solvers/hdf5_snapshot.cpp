#include "solvers/hdf5_snapshot.hpp"

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

#include "data/hdf5_handle.hpp"
#include "data/hdf5_memory_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

constexpr const char* kResumeDataset = "xtrain_resume";

std::string shape_text(const std::vector<hsize_t>& dims) {
  std::string text = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + ")";
}

// The blob index a dataset name stands for ("0", "1", ...), or -1.
int blob_index(const std::string& name) {
  if (name.empty() || name.size() > 6 || (name.size() > 1 && name[0] == '0')) return -1;
  if (name.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(name);
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

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

int read_int(hid_t file, const char* name, const std::string& path) {
  Hdf5Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot read '", name, "' in '", path, "'", hdf5_reason());
  const std::vector<hsize_t> dims = dataset_dims(dataset.get(), name, path);
  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  const H5T_class_t type_class = type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  XTRAIN_CHECK((type_class == H5T_INTEGER || type_class == H5T_FLOAT) &&
                   std::all_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 1; }),
               "'", name, "' in '", path, "' should be one integer, but it holds ",
               type_class == H5T_INTEGER || type_class == H5T_FLOAT ? "an array of shape "
                                                                    : "non-numbers of shape ",
               shape_text(dims));
  int value = 0;
  XTRAIN_CHECK(H5Dread(dataset.get(), H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) >= 0,
               "cannot read '", name, "' in '", path, "'", hdf5_reason());
  return value;
}

// Reads a scalar string, fixed-length (Caffe) or variable-length (h5py).
std::string read_string(hid_t file, const char* name, const std::string& path) {
  Hdf5Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot read '", name, "' in '", path, "'", hdf5_reason());
  const std::vector<hsize_t> dims = dataset_dims(dataset.get(), name, path);
  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  XTRAIN_CHECK(type.valid() && H5Tget_class(type.get()) == H5T_STRING &&
                   std::all_of(dims.begin(), dims.end(), [](hsize_t d) { return d == 1; }),
               "'", name, "' in '", path, "' should be one string");
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    XTRAIN_CHECK(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0,
                 "cannot read '", name, "' in '", path, "'", hdf5_reason());
    std::string value = text ? text : "";
    Hdf5Handle space(H5Dget_space(dataset.get()), H5Sclose);
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, &text);
    return value;
  }
  // Read with the file's own type (no conversion), plus a NUL of our own in
  // case the string fills its whole width.
  std::vector<char> text(H5Tget_size(type.get()) + 1, '\0');
  XTRAIN_CHECK(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()) >= 0,
               "cannot read '", name, "' in '", path, "'", hdf5_reason());
  std::string value(text.data());
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);
  }
  return value;
}

std::string read_bytes(hid_t file, const char* name, const std::string& path) {
  Hdf5Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  XTRAIN_CHECK(dataset.valid(), "cannot read '", name, "' in '", path, "'", hdf5_reason());
  const std::vector<hsize_t> dims = dataset_dims(dataset.get(), name, path);
  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  XTRAIN_CHECK(type.valid() && H5Tget_class(type.get()) == H5T_INTEGER &&
                   H5Tget_size(type.get()) == 1 && dims.size() == 1,
               "'", name, "' in '", path, "' should be a 1-d array of bytes");
  std::string bytes(dims[0], '\0');
  if (bytes.empty()) return bytes;
  XTRAIN_CHECK(
      H5Dread(dataset.get(), H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0,
      "cannot read '", name, "' in '", path, "'", hdf5_reason());
  return bytes;
}

}  // namespace

void write_net_hdf5(const NetParameter& weights, const std::string& path, bool write_diff) {
  check_layer_names(weights, path);
  write_hdf5_atomically(path, [&](hid_t file) {
    write_layers(file, weights, /*diff=*/false, path);
    if (write_diff) write_layers(file, weights, /*diff=*/true, path);
  });
}

NetParameter read_net_hdf5(const std::string& path) {
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

SolverState read_solver_state_hdf5(const std::string& path) {
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

#include "data/hdf5_file.hpp"

#include <hdf5.h>

#include <climits>
#include <cstdint>
#include <filesystem>
#include <type_traits>
#include <utility>

#include "core/hdf5_handle.hpp"
#include "xtrain/error.hpp"

namespace xtrain {

static_assert(std::is_same_v<hid_t, std::int64_t>,
              "Hdf5File keeps the file's hid_t as std::int64_t (HDF5 >= 1.10)");

namespace {

// Opens `name` if it is a dataset, else returns -1. Each group on the way is
// checked first, because H5Lexists fails (rather than answering "no") when
// an intermediate group is missing.
hid_t open_dataset_if_present(hid_t file, const std::string& name) {
  std::size_t start = 0;
  while (start < name.size()) {
    std::size_t slash = name.find('/', start);
    if (slash == std::string::npos) slash = name.size();
    if (slash > start && H5Lexists(file, name.substr(0, slash).c_str(), H5P_DEFAULT) <= 0) {
      return -1;
    }
    start = slash + 1;
  }
  if (name.find_first_not_of('/') == std::string::npos) return -1;
  const hid_t object = H5Oopen(file, name.c_str(), H5P_DEFAULT);
  if (object < 0) return -1;
  if (H5Iget_type(object) != H5I_DATASET) {
    H5Oclose(object);
    return -1;
  }
  return object;
}

herr_t collect_dataset_name(hid_t group, const char* name, const H5L_info_t*, void* names) {
  const hid_t object = open_dataset_if_present(group, name);
  if (object >= 0) {
    static_cast<std::vector<std::string>*>(names)->push_back(name);
    H5Oclose(object);
  }
  return 0;
}

const char* type_class_name(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "floating point";
    case H5T_TIME:
      return "time";
    case H5T_STRING:
      return "string";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_COMPOUND:
      return "compound";
    case H5T_REFERENCE:
      return "reference";
    case H5T_ENUM:
      return "enum";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown";
  }
}

std::string dims_to_string(const std::vector<hsize_t>& dims) {
  std::string text;
  for (hsize_t d : dims) text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text;
}

}  // namespace

Hdf5File::Hdf5File(const std::string& path) : path_(path) {
  std::error_code ignored;
  XTRAIN_CHECK(std::filesystem::exists(path, ignored), "HDF5 file '", path,
               "' does not exist; check the path (relative paths are relative to the "
               "working directory)");
  XTRAIN_CHECK(!std::filesystem::is_directory(path, ignored), "'", path,
               "' is a directory, not an HDF5 file");
  QuietHdf5Errors quiet;
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  XTRAIN_CHECK(is_hdf5 >= 0, "cannot read HDF5 file '", path, "'", hdf5_reason());
  XTRAIN_CHECK(is_hdf5 > 0, "'", path, "' is not an HDF5 file (no HDF5 signature)");
  id_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  XTRAIN_CHECK(id_ >= 0, "cannot open HDF5 file '", path, "'", hdf5_reason());
}

Hdf5File::~Hdf5File() {
  if (id_ >= 0) {
    QuietHdf5Errors quiet;
    H5Fclose(id_);
  }
}

Hdf5File::Hdf5File(Hdf5File&& other) noexcept
    : path_(std::move(other.path_)), id_(std::exchange(other.id_, -1)) {}

Hdf5File& Hdf5File::operator=(Hdf5File&& other) noexcept {
  if (this != &other) {
    Hdf5File doomed(std::move(*this));
    path_ = std::move(other.path_);
    id_ = std::exchange(other.id_, -1);
  }
  return *this;
}

std::vector<std::string> Hdf5File::dataset_names() const {
  QuietHdf5Errors quiet;
  std::vector<std::string> names;
  hsize_t position = 0;
  const herr_t status =
      H5Literate(id_, H5_INDEX_NAME, H5_ITER_INC, &position, collect_dataset_name, &names);
  XTRAIN_CHECK(status >= 0, "cannot list the datasets of HDF5 file '", path_, "'", hdf5_reason());
  return names;
}

bool Hdf5File::has_dataset(const std::string& name) const {
  QuietHdf5Errors quiet;
  Hdf5Handle dataset(open_dataset_if_present(id_, name), H5Oclose);
  return dataset.valid();
}

namespace {

// The dims of an open dataset, checked to fit the int axes of a Blob.
std::vector<int> checked_dims(hid_t dataset, const std::string& path, const std::string& name) {
  Hdf5Handle space(H5Dget_space(dataset), H5Sclose);
  XTRAIN_CHECK(space.valid(), "cannot read the shape of dataset '", name, "' in HDF5 file '", path,
               "'", hdf5_reason());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  XTRAIN_CHECK(rank >= 0, "cannot read the shape of dataset '", name, "' in HDF5 file '", path, "'",
               hdf5_reason());
  XTRAIN_CHECK(rank >= 1, "dataset '", name, "' in HDF5 file '", path,
               "' is a scalar; it needs at least one axis (its rows)");
  std::vector<hsize_t> extents(rank);
  H5Sget_simple_extent_dims(space.get(), extents.data(), nullptr);
  std::vector<int> dims;
  for (hsize_t extent : extents) {
    XTRAIN_CHECK(extent <= static_cast<hsize_t>(INT_MAX), "dataset '", name, "' in HDF5 file '",
                 path, "' has shape ", dims_to_string(extents),
                 "; an axis longer than 2^31-1 does not fit a blob, split the file");
    dims.push_back(static_cast<int>(extent));
  }
  return dims;
}

}  // namespace

std::vector<int> Hdf5File::dataset_dims(const std::string& name) const {
  QuietHdf5Errors quiet;
  Hdf5Handle dataset(open_dataset_if_present(id_, name), H5Oclose);
  XTRAIN_CHECK(dataset.valid(), "HDF5 file '", path_, "' has no dataset '", name, "'");
  return checked_dims(dataset.get(), path_, name);
}

std::vector<int> Hdf5File::read_floats(const std::string& name, std::vector<float>* values) const {
  QuietHdf5Errors quiet;
  Hdf5Handle dataset(open_dataset_if_present(id_, name), H5Oclose);
  XTRAIN_CHECK(dataset.valid(), "HDF5 file '", path_, "' has no dataset '", name, "'");
  const std::vector<int> dims = checked_dims(dataset.get(), path_, name);

  Hdf5Handle type(H5Dget_type(dataset.get()), H5Tclose);
  XTRAIN_CHECK(type.valid(), "cannot read the element type of dataset '", name, "' in HDF5 file '",
               path_, "'", hdf5_reason());
  const H5T_class_t type_class = H5Tget_class(type.get());
  XTRAIN_CHECK(type_class == H5T_FLOAT || type_class == H5T_INTEGER, "dataset '", name,
               "' in HDF5 file '", path_, "' holds ", type_class_name(type_class),
               " values; only numbers (float, double or integers) can be read as float");

  std::size_t count = 1;
  for (int d : dims) {
    XTRAIN_CHECK(d == 0 || count <= SIZE_MAX / sizeof(float) / static_cast<std::size_t>(d),
                 "dataset '", name, "' in HDF5 file '", path_, "' is too large to load");
    count *= static_cast<std::size_t>(d);
  }
  check_stored_size(dataset.get(), count * sizeof(float), name, path_,
                    "write the file again, or remove it from the list");
  values->resize(count);
  // HDF5 rejects a null buffer even for an empty selection.
  if (count == 0) return dims;
  const herr_t status =
      H5Dread(dataset.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values->data());
  XTRAIN_CHECK(status >= 0, "cannot read dataset '", name, "' of HDF5 file '", path_, "'",
               hdf5_reason());
  return dims;
}

}  // namespace xtrain

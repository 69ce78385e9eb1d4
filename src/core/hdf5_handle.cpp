#include "core/hdf5_handle.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "xtrain/error.hpp"

namespace xtrain {
namespace {

herr_t keep_innermost_description(unsigned depth, const H5E_error2_t* entry, void* reason) {
  if (depth == 0 && entry->desc != nullptr) *static_cast<std::string*>(reason) = entry->desc;
  return 0;
}

}  // namespace

std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost_description, &reason);
  // Some descriptions embed a ctime() string; keep the message on one line.
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return reason.empty() ? std::string() : " (HDF5: " + reason + ")";
}

void check_stored_size(hid_t dataset, std::uint64_t claimed_bytes, const std::string& where,
                       const std::string& path, const char* remedy) {
  constexpr std::uint64_t kMaxCompressionRatio = 1032;
  std::error_code ignored;
  const std::uint64_t file_size = std::filesystem::file_size(path, ignored);
  const std::uint64_t stored =
      std::min<std::uint64_t>(H5Dget_storage_size(dataset), ignored ? UINT64_MAX : file_size);
  XTRAIN_CHECK(claimed_bytes / kMaxCompressionRatio <= stored, "'", where, "' in '", path,
               "' claims ", claimed_bytes, " bytes of values but the file stores ", stored,
               " for it: the file is damaged or cut short; ", remedy);
}

}  // namespace xtrain

#include "core/hdf5_handle.hpp"

#include <algorithm>

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

}  // namespace xtrain

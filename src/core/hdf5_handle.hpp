// The small pieces every user of the HDF5 C API here needs: identifiers that
// close themselves, HDF5's error printing switched off, and HDF5's own reason
// for a failed call, to put in an xtrain::Error.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <utility>

namespace xtrain {

// Turns HDF5's automatic error printing off for this thread (the error stack
// is per thread in a thread-safe build) and restores the caller's handler on
// exit, so an application that wants HDF5's diagnostics keeps them.
class QuietHdf5Errors {
 public:
  QuietHdf5Errors() {
    H5Eget_auto2(H5E_DEFAULT, &saved_handler_, &saved_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietHdf5Errors() { H5Eset_auto2(H5E_DEFAULT, saved_handler_, saved_data_); }
  QuietHdf5Errors(const QuietHdf5Errors&) = delete;
  QuietHdf5Errors& operator=(const QuietHdf5Errors&) = delete;

 private:
  H5E_auto2_t saved_handler_ = nullptr;
  void* saved_data_ = nullptr;
};

// HDF5's own reason for the call that just failed on this thread, as
// " (HDF5: ...)", or "" if it gave none: the entry of its error stack where the
// failure was detected (the most specific one). H5E functions leave the stack
// alone, so this must run before any other HDF5 call.
std::string hdf5_reason();

// Throws unless the file at `path` stores enough bytes for the
// `claimed_bytes` that `dataset`'s shape and type promise, before anything
// that size is allocated: a damaged header can claim billions of values.
// Compressed datasets store less than they hold, but deflate packs at most
// 1032 bytes into one. `where` names the dataset in the message, `remedy`
// says what to do ("use an earlier snapshot").
void check_stored_size(hid_t dataset, std::uint64_t claimed_bytes, const std::string& where,
                       const std::string& path, const char* remedy);

// An HDF5 identifier closed when it goes out of scope (-1: none).
class Hdf5Handle {
 public:
  Hdf5Handle(hid_t id, herr_t (*closer)(hid_t)) : id_(id), close_(closer) {}
  ~Hdf5Handle() {
    if (id_ >= 0) close_(id_);
  }
  Hdf5Handle(Hdf5Handle&& other) noexcept
      : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Hdf5Handle& operator=(Hdf5Handle&& other) noexcept {
    if (this != &other) {
      if (id_ >= 0) close_(id_);
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now and reports whether HDF5 succeeded: closing a file is where
  // buffered writes reach the disk, so a full disk may only show here.
  bool close() {
    const hid_t id = std::exchange(id_, -1);
    return id < 0 || close_(id) >= 0;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

}  // namespace xtrain

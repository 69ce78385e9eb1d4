#include "core/hdf5_memory_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "xtrain/atomic_file.hpp"
#include "xtrain/error.hpp"

namespace xtrain {
namespace {

// How much HDF5's buffer grows by at a time.
constexpr std::size_t kGrowthBytes = std::size_t{8} << 20;

// Without a backing file the core driver tells open files apart by name
// only, so each in-memory file gets its own.
std::string unique_memory_name(const std::string& path) {
  static std::atomic<unsigned long> counter{0};
  return path + ".in-memory-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

void write_all(const std::string& temp_path, const char* bytes, std::size_t size,
               const std::string& path) {
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  XTRAIN_CHECK(fd >= 0, "cannot write '", path, "': ", std::strerror(errno));
  std::size_t written = 0;
  while (written < size) {
    // Linux writes at most about 2 GiB per call.
    const ssize_t n = ::write(fd, bytes + written, std::min(size - written, std::size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n == 0 ? EIO : errno;
      ::close(fd);
      throw Error("cannot write '" + path + "' (" + std::to_string(size) +
                  " bytes): " + std::strerror(error));
    }
    written += static_cast<std::size_t>(n);
  }
  XTRAIN_CHECK(::close(fd) == 0, "cannot write '", path, "': ", std::strerror(errno));
}

}  // namespace

Hdf5MemoryFile::Hdf5MemoryFile(const std::string& path) : path_(path) {
  QuietHdf5Errors quiet;
  Hdf5Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5FD_file_image_callbacks_t callbacks = {allocate,   copy,        reallocate, release,
                                           share_self, forget_self, this};
  XTRAIN_CHECK(access.valid() &&
                   H5Pset_fapl_core(access.get(), kGrowthBytes, /*backing_store=*/false) >= 0 &&
                   H5Pset_file_image_callbacks(access.get(), &callbacks) >= 0,
               "cannot create HDF5 file '", path, "'", hdf5_reason());
  file_ = Hdf5Handle(
      H5Fcreate(unique_memory_name(path).c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()),
      H5Fclose);
  XTRAIN_CHECK(file_.valid(), "cannot create HDF5 file '", path, "'", hdf5_reason());
}

Hdf5MemoryFile::~Hdf5MemoryFile() {
  if (file_.valid()) {
    QuietHdf5Errors quiet;
    file_.close();
  }
  std::free(image_);
}

void Hdf5MemoryFile::save() {
  XTRAIN_ASSERT(file_.valid(), "Hdf5MemoryFile::save called twice");
  ssize_t size = -1;
  {
    QuietHdf5Errors quiet;
    XTRAIN_CHECK(H5Fflush(file_.get(), H5F_SCOPE_LOCAL) >= 0, "cannot finish HDF5 file '", path_,
                 "'", hdf5_reason());
    // The size of the complete file; closing a flushed file with no open
    // objects does not change it.
    size = H5Fget_file_image(file_.get(), nullptr, 0);
    XTRAIN_CHECK(size >= 0, "cannot finish HDF5 file '", path_, "'", hdf5_reason());
    XTRAIN_CHECK(file_.close(), "cannot finish HDF5 file '", path_, "'", hdf5_reason());
  }
  XTRAIN_ASSERT(image_ != nullptr || size == 0, "HDF5 did not hand over the image of '", path_,
                "'");
  write_path_atomically(path_, [&](const std::string& temp_path) {
    write_all(temp_path, static_cast<const char*>(image_), static_cast<std::size_t>(size), path_);
  });
}

void* Hdf5MemoryFile::allocate(std::size_t size, H5FD_file_image_op_t, void*) {
  return std::malloc(size);
}

void* Hdf5MemoryFile::copy(void* target, const void* source, std::size_t size, H5FD_file_image_op_t,
                           void*) {
  return std::memcpy(target, source, size);
}

void* Hdf5MemoryFile::reallocate(void* memory, std::size_t size, H5FD_file_image_op_t, void*) {
  return std::realloc(memory, size);
}

herr_t Hdf5MemoryFile::release(void* memory, H5FD_file_image_op_t operation, void* self) {
  if (operation == H5FD_FILE_IMAGE_OP_FILE_CLOSE) {
    auto* file = static_cast<Hdf5MemoryFile*>(self);
    std::free(file->image_);
    file->image_ = memory;
  } else {
    std::free(memory);
  }
  return 0;
}

}  // namespace xtrain

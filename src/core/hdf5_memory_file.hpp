// A new HDF5 file built in memory and then written to disk atomically by us.
//
// Why not let HDF5 write the file: when a write fails midway (a full disk),
// HDF5 1.10 cannot close the file any more, and its exit handler later
// crashes the process trying again. Built in memory (HDF5's "core" driver
// without a backing file), no HDF5 call touches the disk, and the disk
// writes are ours: they fail with an xtrain::Error, leave no temporary file
// and keep the previous file.
//
// The cost is memory: the whole file, once. HDF5 hands its buffer over when
// the file is closed, so there is no second copy.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>

#include "core/hdf5_handle.hpp"

namespace xtrain {

class Hdf5MemoryFile {
 public:
  // Starts an empty file; `path` is where save() will put it, and is named
  // in error messages. Throws xtrain::Error if HDF5 cannot create it.
  explicit Hdf5MemoryFile(const std::string& path);
  ~Hdf5MemoryFile();
  Hdf5MemoryFile(const Hdf5MemoryFile&) = delete;  // HDF5 holds our address
  Hdf5MemoryFile& operator=(const Hdf5MemoryFile&) = delete;

  // The file's id, to create groups and datasets in. Close every object
  // opened in it before save().
  hid_t id() const { return file_.get(); }

  // Closes the file and writes its bytes to path() atomically (see
  // write_path_atomically). Throws xtrain::Error naming the file and the
  // reason; the previous file under path(), if any, is then untouched.
  void save();

  const std::string& path() const { return path_; }

 private:
  static void* allocate(std::size_t size, H5FD_file_image_op_t, void* self);
  static void* copy(void* target, const void* source, std::size_t size, H5FD_file_image_op_t,
                    void* self);
  static void* reallocate(void* memory, std::size_t size, H5FD_file_image_op_t, void* self);
  static herr_t release(void* memory, H5FD_file_image_op_t operation, void* self);
  static void* share_self(void* self) { return self; }
  static herr_t forget_self(void*) { return 0; }

  std::string path_;
  void* image_ = nullptr;  // HDF5's buffer, ours once the file is closed
  Hdf5Handle file_{-1, H5Fclose};
};

}  // namespace xtrain

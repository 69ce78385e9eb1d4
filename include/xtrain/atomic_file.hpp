// Files that appear whole or not at all.
//
// A snapshot is worth something only if the last good one survives a kill,
// a power cut or a full disk while the next one is written. So every file
// that must not be half-written goes to a temporary name in the same
// directory (same filesystem, so the rename is atomic), is fsync'd, renamed
// over the final name, and the directory is fsync'd so the rename itself is
// durable.
#pragma once

#include <functional>
#include <string>

#include "xtrain/export.hpp"

namespace xtrain {

// Writes `bytes` to `path` atomically. Throws xtrain::Error naming the file
// and the system's reason (e.g. "No space left on device"); the previous
// file under `path`, if any, is untouched and no temporary file is left.
XTRAIN_API void write_file_atomically(const std::string& path, const std::string& bytes);

// For writers that need a path to write to (HDF5): calls write(temp_path)
// with a fresh temporary path next to `path`, then fsyncs and renames it into
// place. If write throws, the temporary file is removed and the error passes
// on; the previous file under `path` is untouched.
XTRAIN_API void write_path_atomically(
    const std::string& path, const std::function<void(const std::string& temp_path)>& write);

// Throws xtrain::Error if a file cannot be written at `path`: it names a
// directory, or its directory is missing or not writable. Writers check it
// before writing; one that writes several files checks them all first, so a
// wrong last path does not leave the first files written.
XTRAIN_API void check_file_can_be_written(const std::string& path);

// The directory part of `path` ("." if none).
XTRAIN_API std::string directory_of(const std::string& path);

}  // namespace xtrain

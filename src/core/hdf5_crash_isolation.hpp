// Reading a user's HDF5 file without letting HDF5 crash the process.
//
// HDF5 1.10 trusts a file's metadata: a damaged object header or B-tree can
// send it through a null or wild pointer (fuzz/hdf5_snapshot_fuzzer found a
// .caffemodel.h5 whose damaged group header faults inside
// H5Gget_create_plist), and nothing we could check before the call tells
// such a file apart. So the read is tried first in a forked child process:
// if the child dies, the caller gets an xtrain::Error naming the file instead
// of the process dying, and only a read that the child survived is done here.
//
// The cost is a fork and the read done twice (the file is then in the page
// cache); the files read this way (HDF5 snapshots, and each file an HDF5Data
// layer lists, the first time it is read) are read once per run.
#pragma once

#include <functional>
#include <string>

namespace xtrain {

// Runs `read` in a child process. Returns if it finished (the caller then
// reads for real); rethrows, as an xtrain::Error with the same message, an
// xtrain::Error the read threw there; throws an xtrain::Error naming `path`
// (described as `kind`, e.g. "the .caffemodel.h5") and ending in `advice`
// (what to do instead, e.g. "use an earlier snapshot") if the child crashed.
// Where no process can be started, returns without trying.
void survive_hdf5_read(const std::string& path, const std::string& kind,
                       const std::string& advice, const std::function<void()>& read);

}  // namespace xtrain

// The snapshots of a training on disk: finding them, checking them, and
// keeping only the newest.
//
// A snapshot is the pair <prefix>_iter_<N>.caffemodel + .solverstate (or
// .caffemodel.h5 + .solverstate.h5 with snapshot_format: HDF5). xtrain ends
// each binary file with a CRC-32 of its bytes, and the .solverstate records
// the size and CRC-32 of its .caffemodel, so a truncated file, a damaged one,
// or a pair from two different snapshots is recognised before it is used.
#pragma once

#include <string>
#include <vector>

#include "xtrain/export.hpp"

namespace xtrain {

struct XTRAIN_API SnapshotOnDisk {
  int iter = 0;
  std::string solverstate_path;
  bool hdf5 = false;
};

// Every <prefix>_iter_<N>.solverstate[.h5] of `prefix`, newest (highest N)
// first. A prefix that names a directory's files ("snapshots/lenet") or a
// bare name in the working directory both work.
XTRAIN_API std::vector<SnapshotOnDisk> list_snapshots(const std::string& prefix);

// Why the snapshot cannot be resumed from ("" if it can): an unreadable or
// truncated file, a checksum that does not match, a missing .caffemodel or
// one that does not belong to the state. Reads both files completely.
XTRAIN_API std::string snapshot_problem(const std::string& solverstate_path);

// The newest snapshot of `prefix` that snapshot_problem() accepts, or "" if
// there is none. Each newer one passed over is described in *skipped
// ("path: reason").
XTRAIN_API std::string find_latest_valid_snapshot(const std::string& prefix,
                                                  std::vector<std::string>* skipped = nullptr);

// Deletes all but the newest `keep` snapshots of `prefix` (both files of
// each; keep <= 0 keeps all). Returns the paths removed.
XTRAIN_API std::vector<std::string> remove_old_snapshots(const std::string& prefix, int keep);

// Deletes the temporary files that writes of `prefix`'s snapshots left when
// their process was killed mid-write. Returns the paths removed.
XTRAIN_API std::vector<std::string> remove_stale_temporary_files(const std::string& prefix);

}  // namespace xtrain

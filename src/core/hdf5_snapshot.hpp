// Snapshots in Caffe 1.0's HDF5 layout (`snapshot_format: HDF5`), for nets
// whose weights do not fit one protobuf message (2 GB).
//
// .caffemodel.h5: a group "data" with one subgroup per layer, named after the
//   layer, holding the layer's param blobs as datasets "0", "1", ... (float,
//   dims = the blob's shape); with diffs, the same again under group "diff".
// .solverstate.h5: "iter" and "current_step" (1-element int datasets),
//   "learned_net" (a fixed-length string), and a group "history" with the
//   solver's history blobs as datasets "0" .. "N-1" (float, their shapes).
//   xtrain adds "xtrain_resume" (uint8: a serialized ResumeState) when the
//   state has one; Caffe reads only the datasets it knows.
//
// Beyond Caffe 1.0, which fails on both:
//  - Layer groups are created with creation order tracked, so layers read
//    back in net order (Caffe's files list them in name order).
//  - A layer name with '/' (GoogLeNet's "conv1/7x7_s2") becomes nested groups,
//    data/conv1/7x7_s2, which is how h5py and HDFView show such a path. Read
//    back, a group is a layer if it holds blob datasets or nothing at all; a
//    blob-less layer whose name is also the prefix of another's ("conv1" and
//    "conv1/7x7_s2") therefore reads back only as that prefix, and is left out.
//
// Every write builds the file in memory first (see Hdf5MemoryFile: the
// whole file, once) and then writes it atomically: a temporary file renamed
// into place. Every failure, HDF5's included, throws xtrain::Error naming the
// file and reason, leaves no temporary file and keeps the previous file.
#pragma once

#include <string>

#include "xtrain/proto/xtrain.pb.h"

namespace xtrain {

// Writes every layer of `weights` (in order, blob-less ones as empty groups),
// and each blob's diff too if `write_diff`. A blob with neither shape nor
// values, or whose shape needs values but that holds no data (a gap, see
// read_net_hdf5), has no data dataset. Throws xtrain::Error for
// duplicate or empty layer names, a blob whose values do not match its shape,
// a missing diff when `write_diff`, and any HDF5 or I/O failure.
void write_net_hdf5(const NetParameter& weights, const std::string& path, bool write_diff);

// The layers of a .caffemodel.h5 (name and blobs: shape, data and, if the
// file has a "diff" group, diff), in the order they were written, or in name
// order for files that did not track it (Caffe's). Float and integer datasets
// are read into `data`/`diff`, double ones into `double_data`/`double_diff`.
// Caffe leaves out the data of a weight-shared blob that is not its owner;
// such a gap reads as a BlobProto with no data (and no shape either, unless
// the file's "diff" group has that blob's diff).
NetParameter read_net_hdf5(const std::string& path);

// Writes iter, learned_net (if set), current_step, history, and the resume
// state if `state.has_resume()`.
void write_solver_state_hdf5(const SolverState& state, const std::string& path);

// Reads a .solverstate.h5. "iter" and "history" are required (as in Caffe);
// "current_step" defaults to 0 and "learned_net" to unset when absent.
SolverState read_solver_state_hdf5(const std::string& path);

// Whether `path` is a readable file that starts with the HDF5 signature (or
// has it after a user block, where HDF5 also looks). Never throws.
bool looks_like_hdf5(const std::string& path);

}  // namespace xtrain

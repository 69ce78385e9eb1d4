// The HDF5 snapshots (`snapshot_format: HDF5`, Caffe's layout): a
// .caffemodel.h5 read by read_net_hdf5 and a .solverstate.h5 read by
// read_solver_state_hdf5, both tried on every input (the seeds are one of
// each, from a 3-iteration training of the fixture's linear net). HDF5 reads
// files only by path, so the input goes to a scratch file first.
//
// The HDF5 library itself is not instrumented: what is looked for here is
// how our reader treats the groups, datasets, shapes and types a damaged file
// offers (and whether HDF5's own failures come back as xtrain::Error).
#include "fuzz_support.hpp"
#include "core/hdf5_snapshot.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, ".h5");
  xtrain_fuzz::expect_only_xtrain_errors([&] { (void)xtrain::read_net_hdf5(file.path()); });
  xtrain_fuzz::expect_only_xtrain_errors(
      [&] { (void)xtrain::read_solver_state_hdf5(file.path()); });
  return 0;
}

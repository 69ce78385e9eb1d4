// An HDF5 file as the HDF5Data layer reads it: listed in the layer's source
// file, its "data" and "label" datasets opened, their shapes checked and
// read as floats, then three forward passes of batch 3 (so that files of
// fewer rows wrap around, and a shuffled layer reorders them).
//
// The first read of each file happens in a child process first
// (hdf5_crash_isolation.hpp): a file that crashes the HDF5 library ends in
// an xtrain::Error, and only files the child survived reach the reading
// here, which is what is fuzzed (our checks of dims, types and sizes, and
// the row bookkeeping). The HDF5 library itself is not instrumented.
#include <fstream>
#include <string>

#include "fuzz_support.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

XTRAIN_FUZZ_INITIALIZE

namespace {

xtrain::NetParameter hdf5_data_net(const std::string& list, bool shuffle) {
  const std::string text = "name: 'hdf5_data'\n"
                           "layer { name: 'data' type: 'HDF5Data' top: 'data' top: 'label'\n"
                           "  hdf5_data_param { source: '" + list + "' batch_size: 3 shuffle: " +
                           (shuffle ? "true" : "false") + " } }\n";
  xtrain::NetParameter param = xtrain::read_net_params_from_text(text, "hdf5_data.prototxt");
  param.mutable_state()->set_phase(xtrain::TRAIN);
  return param;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, ".h5");
  const std::string list = xtrain_fuzz::scratch_directory() + "/hdf5_files.txt";
  {
    std::ofstream out(list);
    out << file.path() << "\n";
  }
  // The shuffled pass only for inputs the plain one reads: half the forks.
  bool read_in_order = false;
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    xtrain::NetOptions options;
    options.verbose = false;
    xtrain::Net net(hdf5_data_net(list, /*shuffle=*/false), options);
    for (int pass = 0; pass < 3; ++pass) net.forward();
    read_in_order = true;
  });
  if (!read_in_order) return 0;
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    xtrain::NetOptions options;
    options.verbose = false;
    xtrain::Net net(hdf5_data_net(list, /*shuffle=*/true), options);
    for (int pass = 0; pass < 3; ++pass) net.forward();
  });
  return 0;
}

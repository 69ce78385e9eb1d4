// A .caffemodel as `xtrain test --weights` and `train --weights` load it:
// read_weights_file (HDF5 signature check, checksum trailer, binary
// NetParameter parse, the cut-short diagnosis, V0/V1 upgrades), then the
// weights copied by layer name into two nets: the small linear net of the
// Caffe snapshot fixture (its weights are the seeds) and LeNet's deploy net
// from models/, each built once. Copying checks every blob's shape against
// the layer's, which is where a damaged or foreign file is caught.
#include <memory>
#include <string>

#include "fuzz_support.hpp"
#include "xtrain/net.hpp"

namespace {
std::unique_ptr<xtrain::Net> build(const std::string& relative_path) {
  xtrain::NetOptions options;
  options.verbose = false;
  return std::make_unique<xtrain::Net>(xtrain_fuzz::source_path(relative_path), xtrain::TEST, 0,
                                       std::vector<std::string>{}, options);
}

std::vector<std::unique_ptr<xtrain::Net>>& nets() {
  static std::vector<std::unique_ptr<xtrain::Net>> built;
  if (built.empty()) {
    built.push_back(build("tests/fixtures/caffe_snapshot/net.prototxt"));
    built.push_back(build("models/lenet/lenet_deploy.prototxt"));
  }
  return built;
}
}  // namespace

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, ".caffemodel");
  for (const std::unique_ptr<xtrain::Net>& net : nets()) {
    xtrain_fuzz::expect_only_xtrain_errors([&] { net->copy_trained_layers_from(file.path()); });
  }
  return 0;
}

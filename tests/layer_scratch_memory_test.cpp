// Layers make their CPU scratch (ones, squares) when a pass runs, not at
// setup: a Net over a huge input (an imported ONNX model, a fuzzed
// prototxt) is built without allocating it, and a pass that cannot have its
// bottom fails in the blob's checked allocation ("out of host memory")
// first. Found by the onnx_import fuzz target (a 598 MB ones vector of
// Reduction, in the Net that import_onnx builds to check pooling windows).
#include <gtest/gtest.h>

#include <fstream>

#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

namespace xtrain {
namespace {

// Resident memory of this process in bytes (/proc/self/statm, pages).
long resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4096;
}

TEST(LayerScratchMemory, ReductionAndMvnSetUpWithoutTheirScratch) {
  // 64 Mi values (256 MiB as floats) in one row: the old setup filled a
  // vector of 64 Mi ones for each layer.
  const NetParameter param = read_net_params_from_text(R"(
    layer { name: 'data' type: 'Input' top: 'data'
      input_param { shape { dim: 1 dim: 1 dim: 8192 dim: 8192 } } }
    layer { name: 'sum' type: 'Reduction' bottom: 'data' top: 'sum' reduction_param { axis: 0 } }
    layer { name: 'mvn' type: 'MVN' bottom: 'data' top: 'mvn' })",
                                                       "huge");
  NetOptions options;
  options.verbose = false;
  const long before = resident_bytes();
  const Net net(param, options);
  EXPECT_LT(resident_bytes() - before, 64L << 20);
}

}  // namespace
}  // namespace xtrain

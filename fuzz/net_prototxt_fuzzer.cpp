// A net prototxt as `xtrain test` and `xtrain time` take it: text parsing,
// the upgrades of old formats (V0, V1, input fields, data transformation,
// BatchNorm), the checks of read_net_params_from_text_file, then the Net built
// on the CPU in the TEST phase (filtering, splits, every layer's setup and
// shapes, parameter sharing, the memory plan). Nothing runs forward: the
// parsers and the shape checks are what a user's file reaches first.
//
// Inputs that ask for big blobs are refused by the library's own limits
// (2^31 elements per blob) or, within them, by the allocator: scripts/fuzz.sh
// runs with ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=...
// so such a blob ends in the library's "out of host memory" error, as it would
// on a machine with that little memory, instead of in libFuzzer's OOM report.
#include <string>

#include "fuzz_support.hpp"
#include "xtrain/net.hpp"
#include "xtrain/proto_io.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  xtrain_fuzz::expect_only_xtrain_errors([&] {
    xtrain::NetParameter param = xtrain::read_net_params_from_text(text, "fuzz.prototxt");
    // What Net(path, TEST) does with it.
    param.mutable_state()->set_phase(xtrain::TEST);
    xtrain::NetOptions options;
    options.verbose = false;
    xtrain::Net net(param, options);
  });
  return 0;
}

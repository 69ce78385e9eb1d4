// A training log as `xtrain plot LOG` reads it (read_training_log): glog
// line prefixes of both glog generations, the Iteration / Train net output /
// Test net output / lr lines, the solver's parameters after "Initializing
// solver from parameters:", and the snapshot file names. Seeds: Caffe's
// LeNet log (tests/fixtures) and an xtrain log (fuzz/seeds/training_log).
#include <sstream>
#include <string>

#include "fuzz_support.hpp"
#include "reporting/training_log_reading.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream log(std::string(reinterpret_cast<const char*>(data), size));
  xtrain_fuzz::expect_only_xtrain_errors([&] { (void)xtrain::read_training_log(log, "fuzz.log"); });
  return 0;
}

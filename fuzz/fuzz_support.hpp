// What every fuzz target shares: the rule for what counts as a finding, a
// quiet library, and scratch files for the readers that take a path.
//
// The rule: the library answers bad input with xtrain::Error, so a target
// catches that and nothing else. Any other exception escapes
// LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer keeps the
// input, as it does for a crash, a sanitizer report, a leak or a timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "xtrain/error.hpp"

namespace xtrain_fuzz {

[[noreturn]] void report_internal_error(const xtrain::InternalError& error);

// Runs `body`; an xtrain::Error is the expected answer to a bad input, unless
// it is an xtrain::InternalError (XTRAIN_ASSERT: a bug), which aborts the
// process: a finding. (Not told by the message: libFuzzer would learn the
// words from the comparison and write them into inputs that errors echo.)
template <typename Body>
void expect_only_xtrain_errors(Body&& body) {
  try {
    std::forward<Body>(body)();
  } catch (const xtrain::InternalError& error) {
    report_internal_error(error);
  } catch (const xtrain::Error&) {
  }
}

// Once per process (from LLVMFuzzerInitialize): errors only in the log,
// the fixed convolution rules (the timed search would time kernels and write
// a cache in the user's home), and the working directory moved to a fresh
// scratch directory, so a file a fuzzed prototxt names (a Data layer's
// source, a snapshot prefix) is looked for, or written, only there.
void prepare_process();

// The scratch directory made by prepare_process().
const std::string& scratch_directory();

// A file of the source tree (models/, tests/fixtures/), by its path from the
// repository root.
std::string source_path(const std::string& relative_path);

// The input as a file in the scratch directory, for readers that take a
// path (the name ends in `suffix`, e.g. ".caffemodel"); removed again when
// this goes out of scope.
class ScratchFile {
 public:
  ScratchFile(const std::uint8_t* data, std::size_t size, const std::string& suffix);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace xtrain_fuzz

// Every target's LLVMFuzzerInitialize is this.
#define XTRAIN_FUZZ_INITIALIZE                         \
  extern "C" int LLVMFuzzerInitialize(int*, char***) { \
    ::xtrain_fuzz::prepare_process();                  \
    return 0;                                          \
  }

#include "fuzz_support.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "xtrain/logging.hpp"

namespace xtrain_fuzz {
namespace {
std::string& scratch() {
  static std::string directory;
  return directory;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz target setup: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(2);
}
}  // namespace

void prepare_process() {
  xtrain::set_min_log_severity(xtrain::LogSeverity::kError);
  setenv("XTRAIN_CPU_ALGORITHM_SEARCH", "heuristic", /*overwrite=*/1);
  std::string pattern = "/tmp/xtrain-fuzz-XXXXXX";
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') {
    pattern = std::string(tmp) + "/xtrain-fuzz-XXXXXX";
  }
  if (mkdtemp(pattern.data()) == nullptr) fail("mkdtemp " + pattern);
  scratch() = pattern;
  setenv("XTRAIN_CACHE_DIR", pattern.c_str(), 1);
  if (chdir(pattern.c_str()) != 0) fail("chdir " + pattern);
  // The directory goes when the process ends normally; after a finding it
  // stays, with whatever the input wrote, which can help reading the finding.
  std::atexit([] {
    const std::string command = "rm -rf '" + scratch() + "'";
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "fuzz target: could not remove %s\n", scratch().c_str());
    }
  });
}

void report_internal_error(const xtrain::InternalError& error) {
  std::fprintf(stderr, "fuzz target: %s\n", error.what());
  std::abort();
}

const std::string& scratch_directory() { return scratch(); }

std::string source_path(const std::string& relative_path) {
  return std::string(XTRAIN_FUZZ_SOURCE_DIR) + "/" + relative_path;
}

ScratchFile::ScratchFile(const std::uint8_t* data, std::size_t size, const std::string& suffix)
    : path_(scratch() + "/input" + suffix) {
  std::ofstream out(path_, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) fail("write " + path_);
}

ScratchFile::~ScratchFile() { std::remove(path_.c_str()); }

}  // namespace xtrain_fuzz

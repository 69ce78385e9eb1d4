#include "xtrain/cpu_convolution_options.hpp"

#include <atomic>
#include <cstdlib>

#include "core/flag_spellings.hpp"

namespace xtrain {
namespace {

// Atomic: solver threads read it while their nets set up.
std::atomic<CpuAlgorithmSearch> algorithm_search{CpuAlgorithmSearch::kHeuristic};

constexpr ChoiceSpelling<CpuAlgorithmSearch> kSearchSpellings[] = {
    {CpuAlgorithmSearch::kHeuristic, "heuristic"}, {CpuAlgorithmSearch::kTimed, "timed"}};

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

void set_cpu_algorithm_search(CpuAlgorithmSearch search) { algorithm_search = search; }

CpuAlgorithmSearch cpu_algorithm_search() { return algorithm_search; }

std::string to_string(CpuAlgorithmSearch search) { return spelling_of(kSearchSpellings, search); }

CpuAlgorithmSearch parse_cpu_algorithm_search(const std::string& text) {
  return parse_spelling(
      kSearchSpellings, text, "--cpu_algorithm_search",
      " is not a search mode; use 'timed' (run each candidate kernel on the layer's shape once, "
      "take the fastest, cache the choice) or 'heuristic' (fixed rules, nothing timed)");
}

std::string cpu_convolution_cache_file() {
  constexpr const char* kFileName = "/cpu_convolutions.tsv";
  if (const std::string dir = environment("XTRAIN_CACHE_DIR"); !dir.empty()) return dir + kFileName;
  if (const std::string dir = environment("XDG_CACHE_HOME"); !dir.empty()) {
    return dir + "/xtrain" + kFileName;
  }
  if (const std::string home = environment("HOME"); !home.empty()) {
    return home + "/.cache/xtrain" + kFileName;
  }
  return {};
}

}  // namespace xtrain

#include "xtrain/cudnn_options.hpp"

#include <atomic>

#include "core/flag_spellings.hpp"

namespace xtrain {
namespace {

// Atomics: solver threads (one per GPU) read them while choosing algorithms.
std::atomic<std::size_t> workspace_limit_mb{kDefaultCudnnWorkspaceLimitMb};
std::atomic<CudnnAlgorithmSearch> algorithm_search{CudnnAlgorithmSearch::kHeuristic};

constexpr ChoiceSpelling<CudnnAlgorithmSearch> kSearchSpellings[] = {
    {CudnnAlgorithmSearch::kHeuristic, "heuristic"}, {CudnnAlgorithmSearch::kTimed, "timed"}};

}  // namespace

void set_cudnn_workspace_limit_mb(std::size_t megabytes) { workspace_limit_mb = megabytes; }

std::size_t cudnn_workspace_limit_mb() { return workspace_limit_mb; }

std::size_t cudnn_workspace_limit_bytes() {
  const std::size_t megabytes = workspace_limit_mb;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  // A cap too large to express in bytes means "no cap".
  return megabytes > static_cast<std::size_t>(-1) / kMiB ? static_cast<std::size_t>(-1)
                                                         : megabytes * kMiB;
}

void set_cudnn_algorithm_search(CudnnAlgorithmSearch search) { algorithm_search = search; }

CudnnAlgorithmSearch cudnn_algorithm_search() { return algorithm_search; }

std::string to_string(CudnnAlgorithmSearch search) { return spelling_of(kSearchSpellings, search); }

CudnnAlgorithmSearch parse_cudnn_algorithm_search(const std::string& text) {
  return parse_spelling(kSearchSpellings, text, "--cudnn_algorithm_search",
                        " is not a search mode; use 'heuristic' (cuDNN's ranking, the "
                        "default) or 'timed' (run each algorithm once, take the fastest)");
}

}  // namespace xtrain

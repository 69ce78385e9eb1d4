// A metrics file (<snapshot_prefix>_metrics.jsonl) as `xtrain plot` and a
// resumed training read it (read_metrics_file): one JSON object per line,
// each parsed by our small JSON reader (strings with escapes, numbers,
// nested "outputs"); read twice, strictly and as a resume does, dropping a
// last line cut short.
#include "fuzz_support.hpp"
#include "reporting/training_metrics.hpp"

XTRAIN_FUZZ_INITIALIZE

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const xtrain_fuzz::ScratchFile file(data, size, "_metrics.jsonl");
  for (bool skip_damaged_last_line : {false, true}) {
    xtrain_fuzz::expect_only_xtrain_errors(
        [&] { (void)xtrain::read_metrics_file(file.path(), skip_damaged_last_line); });
  }
  return 0;
}

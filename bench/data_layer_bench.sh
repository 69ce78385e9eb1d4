#!/usr/bin/env bash
# Builds bench/data_layer_bench.cpp against a build of libxtrain and runs it
# RUNS times, printing each run's images/s and the median.
#   bench/data_layer_bench.sh [RUNS] [bench flags: --threads=N --batch=256 --batches=20 ...]
# XTRAIN_BUILD_DIR (default build) names the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
shift || true
BIN=$(bench/compile.sh data_layer_bench)
rates=()
for run in $(seq "$RUNS"); do
  line=$("$BIN" "$@" | tail -1)
  echo "run $run: $line"
  rates+=("$(echo "$line" | sed -E 's/.*: ([0-9]+) images\/s.*/\1/')")
done
printf '%s\n' "${rates[@]}" | python3 -c '
import statistics, sys
rates = [float(x) for x in sys.stdin if x.strip()]
print(f"median of {len(rates)} runs: {statistics.median(rates):.0f} images/s")
'

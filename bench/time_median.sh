#!/usr/bin/env bash
# Runs `xtrain time` on a net several times and prints the median forward,
# backward and forward-backward ms per iteration (the machine is shared and
# noisy: single runs vary by 20% or more).
#   bench/time_median.sh [NET.prototxt] [RUNS] [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
NET="${1:-models/lenet/lenet_train_test.prototxt}"
RUNS="${2:-5}"
ITERATIONS="${3:-100}"
XTRAIN="${XTRAIN_BUILD_DIR:-build}/bin/xtrain"

results=()
for run in $(seq "$RUNS"); do
  line=$("$XTRAIN" time --model="$NET" --iterations="$ITERATIONS" 2>/dev/null | grep "^forward ")
  echo "run $run: $line"
  results+=("$(echo "$line" | awk '{print $2, $5, $8}')")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin if line.strip()]
f, b, fb = (statistics.median(col) for col in zip(*rows))
print(f"median of {len(rows)} runs: forward {f:.2f} ms, backward {b:.2f} ms, forward-backward {fb:.2f} ms")
'

#!/usr/bin/env bash
# Times the whole 10,000-iteration LeNet Fashion-MNIST run (tests included)
# RUNS times and prints each wall time and final accuracy, then the medians.
#   bench/lenet_full_run.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"
XTRAIN="${XTRAIN_BUILD_DIR:-build}/bin/xtrain"
examples/fashion_mnist/create_fashion_mnist.sh > /dev/null

walls=()
for run in $(seq "$RUNS"); do
  log=$(mktemp)
  start=$(date +%s.%N)
  "$XTRAIN" train --solver=models/lenet/lenet_solver.prototxt > "$log" 2>&1
  end=$(date +%s.%N)
  wall=$(python3 -c "print(f'{$end - $start:.1f}')")
  accuracy=$(grep -o "accuracy = [0-9.]*" "$log" | tail -1)
  echo "run $run: ${wall} s wall, final $accuracy"
  walls+=("$wall")
  rm -f "$log"
done
printf '%s\n' "${walls[@]}" | python3 -c '
import statistics, sys
walls = [float(x) for x in sys.stdin if x.strip()]
print(f"median wall time of {len(walls)} runs: {statistics.median(walls):.1f} s")
'

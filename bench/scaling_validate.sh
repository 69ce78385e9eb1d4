#!/usr/bin/env bash
# Measures data-parallel iterations on namespaced nodes (scripts/netns_cluster.sh)
# and sets them beside bench/scaling_model.py's predictions.
#
#   bench/scaling_validate.sh BUILD_DIR [OUT_DIR]      (root; ~5 minutes)
#
# For LeNet and CIFAR10-quick at 100 Mbit/s and 1 Gbit/s, and AlexNet (61 M
# parameters, 233 MiB of gradients) at 1 and 4 Gbit/s per link, on 2 and 3
# nodes: one rank per node, one thread per rank, the bench nets (DummyData,
# no data loading) at a small batch. Measured: the median of the per-display
# iteration times after the first display. Predicted: the model from the
# net's `xtrain time --threads=1` log (the layers' shares), rescaled to the
# iteration of one process trained just before each run (the machine's load
# of the moment), times max(1, ranks / CPUs) since the ranks of this one
# machine share its CPUs; the sums run after backward (--overlap none: over
# TCP, Open MPI moves a non-blocking sum's data only inside MPI calls, and
# --overlap polled, which lets a step start at every layer boundary, came out
# 10-40% under the measurements at 1 Gbit/s). The link is calibrated per
# rate on 2 nodes with tests/mpi/comm_probe's `link` mode.
set -euo pipefail
build=$(cd "${1:?usage: bench/scaling_validate.sh BUILD_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/scaling_validate.XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
cluster="bash $here/../scripts/netns_cluster.sh --name sv$$"
mkdir -p "$out"
cpus=$(nproc)
trap '$cluster down >/dev/null 2>&1 || true' EXIT

# The median time of an iteration in a training log, from the display lines.
median_ms() {
  python3 - "$1" "$2" <<'EOF'
import re, statistics, sys
times = [float(s) / int(sys.argv[2]) for s in
         re.findall(r'Iteration \d+ \([\d.]+ iter/s, ([\d.]+)s/\d+ iters\)', open(sys.argv[1]).read())]
times = times[2:] if len(times) > 3 else times[1:]
print(f'{statistics.median(times) * 1000:.1f}')
EOF
}

# net batch iterations display "rate rate"
configs=(
  "lenet 64 40 5 100mbit 1gbit"
  "cifar10_quick 32 40 5 100mbit 1gbit"
  "alexnet 4 7 1 1gbit 4gbit"
)

# xtrain's default all-reduce over MPI (ring), and Open MPI's own choice for
# in-place sums (binomial), which xtrain overrides (src/comm/mpi_communicator.cpp).
algorithms=${ALGORITHMS:-ring binomial}
echo "net,rate,nodes,algorithm,bus_gbit,step_latency_us,one_process_ms,measured_ms,predicted_ms,difference" >"$out/table.csv"
: >"$out/calibration.txt"
for config in "${configs[@]}"; do
  read -r net batch iterations display rate1 rate2 <<<"$config"
  rates="$rate1 $rate2"
  model="$out/$net.prototxt"
  sed -E "0,/dim: [0-9]+ dim:/s/dim: [0-9]+ dim:/dim: $batch dim:/; 0,/shape \{ dim: [0-9]+ \}/s/shape \{ dim: [0-9]+ \}/shape { dim: $batch }/" \
    "$here/nets/$net.prototxt" >"$model"
  OMP_NUM_THREADS=1 "$build/bin/xtrain" time --model="$model" --threads=1 --iterations=10 \
    >"$out/$net.time.log" 2>&1
  cat >"$out/$net.solver.prototxt" <<EOF
net: "$model"
base_lr: 0.001
momentum: 0.9
lr_policy: "fixed"
display: $display
max_iter: $iterations
snapshot_after_train: false
snapshot_prefix: "$out/$net"
solver_mode: CPU
random_seed: 1
EOF
  for algorithm in $algorithms; do
  for rate in $rates; do
    # The link as the sums see it, measured on 2 nodes as nccl-tests would
    # on a cluster: the bus bandwidth of an 8 MB sum and the per-step
    # latency of a 1-float one (2 ranks: 2 steps in either algorithm). On
    # this 2-core machine, shared with other jobs, the TCP stack reaches
    # ~90% of a 1 Gbit/s rate and ~3 Gbit/s in all, and a step waits for
    # the peer's time slice (milliseconds under load).
    $cluster up 2 --rate "$rate" --owner $$ >/dev/null
    calibration=$($cluster mpirun --mca coll_libnbc_iallreduce_algorithm ring -np 2 \
      "$build/bin/comm_probe" link 120 2000000 5 | grep '^link:')
    $cluster down >/dev/null
    bus_gbit=$(echo "$calibration" | sed -E 's/.*bus bandwidth ([0-9.]+) Gbit.*/\1/')
    latency_us=$(echo "$calibration" | sed -E 's/.*of 1 float ([0-9.]+) ms.*/\1/' |
      python3 -c "import sys; print(float(sys.stdin.read()) * 1000 / 2)")
    echo "# $net $algorithm $rate: $calibration -> latency ${latency_us} us per step" >>"$out/calibration.txt"
    for nodes in 2 3; do
      $cluster up "$nodes" --rate "$rate" --owner $$ >/dev/null
      # One process alone, just before: the compute of one worker under
      # this machine's load of the moment (other jobs share its CPUs).
      single="$out/$net.single.log"
      OMP_NUM_THREADS=1 "$build/bin/xtrain" train --solver="$out/$net.solver.prototxt" \
        --metrics=none >"$single" 2>&1
      log="$out/$net.$rate.$nodes.$algorithm.log"
      $cluster mpirun --mca coll_libnbc_iallreduce_algorithm "$algorithm" -np "$nodes" env OMP_NUM_THREADS=1 "$build/bin/xtrain" train \
        --solver="$out/$net.solver.prototxt" --metrics=none >"$log" 2>&1 || {
        echo "failed: $log" >&2
        tail -20 "$log" >&2
        exit 1
      }
      $cluster down >/dev/null
      measured=$(median_ms "$log" "$display")
      alone=$(median_ms "$single" "$display")
      scale=$(python3 -c "print(max(1.0, $nodes / $cpus))")
      predicted=$(python3 "$here/scaling_model.py" --model "$model" --time-log "$out/$net.time.log" \
        --bandwidth-gbit "$bus_gbit" --latency-us "$latency_us" --workers "$nodes" --compute-scale "$scale" \
        --iteration-ms "$alone" --update-ms 0 --overlap none --algorithm "$algorithm" |
        awk 'NR > 2 {print $2}')
      difference=$(python3 -c "print(f'{($predicted - $measured) / $measured * 100:+.1f}%')")
      echo "$net,$rate,$nodes,$algorithm,$bus_gbit,$latency_us,$alone,$measured,$predicted,$difference" | tee -a "$out/table.csv"
    done
  done
  done
done
echo "table: $out/table.csv"

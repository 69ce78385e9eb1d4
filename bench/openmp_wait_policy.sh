#!/usr/bin/env bash
# xtrain's default OpenMP waiting (adaptive: a long spin while the other
# processes leave our CPUs idle, a short one while they keep them busy;
# src/core/openmp_spin.hpp) against the fixed policies, each beside PyTorch:
#
#   bench/openmp_wait_policy.sh [--busy] [--runs N] [--nets lenet,cifar10_quick]
#                               [--xtrain build/bin/xtrain] [-- more cpu_nets.py arguments]
#
# Runs bench/cpu_nets.py three times: with no wait variable set (both
# frameworks at their defaults: xtrain adaptive, PyTorch libgomp's 300000
# polls), with --env OMP_WAIT_POLICY=active and with --env
# OMP_WAIT_POLICY=passive (both frameworks). Compare the "x/t" and "step"
# columns (PyTorch's ms over xtrain's) across the three tables.
#
# Quiet machine (the default): the other processes should use almost none of
# the CPUs; the script measures them over 5 s first and says how much they
# used (cpu_nets.py reports it for each run too). --busy starts one neighbour
# of its own (a shell loop that keeps one CPU busy) for the whole
# measurement and stops it at the end, so "busy" means at least that.
set -euo pipefail
cd "$(dirname "$0")/.."

busy=0
runs=3
nets=lenet,cifar10_quick
xtrain=build/bin/xtrain
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --busy) busy=1 ;;
    --runs) runs="$2"; shift ;;
    --nets) nets="$2"; shift ;;
    --xtrain) xtrain="$2"; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "openmp_wait_policy.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
  shift
done

# The other processes' CPU use over 5 s, in CPUs (/proc/stat, all CPUs).
others_now() {
  python3 - <<'EOF'
import time
def busy_total():
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)
b0, t0 = busy_total(); time.sleep(5); b1, t1 = busy_total()
import os
cpus = os.cpu_count()
print("%.2f" % ((b1 - b0) / ((t1 - t0) / cpus)))
EOF
}

neighbour=""
stop_neighbour() { [ -n "$neighbour" ] && kill "$neighbour" 2>/dev/null; neighbour=""; }
trap stop_neighbour EXIT
if [ "$busy" = 1 ]; then
  sh -c 'while :; do :; done' &
  neighbour=$!
  echo "busy: neighbour pid $neighbour keeps one CPU busy"
fi
echo "before: other processes used $(others_now) CPUs over 5 s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
lscpu | grep -E "^Model name|^CPU family|^Model:|^L2 cache|^CPU\(s\)" | sed 's/^/cpu: /'

for setting in default active passive; do
  env_args=()
  [ "$setting" != default ] && env_args=(--env "OMP_WAIT_POLICY=$setting")
  echo
  echo "=== OpenMP waiting: $setting ($(date -u +%H:%M:%S) UTC) ==="
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT python3 bench/cpu_nets.py "$xtrain" "$runs" \
    --nets "$nets" "${env_args[@]}" "${extra[@]}"
done

#!/usr/bin/env bash
# Times oneDNN's convolutions on the bench nets' shapes with Debian's oneDNN
# 2.6 (libdnnl-dev) and with the newest GNU-OpenMP build on PyPI (oneDNN 3.2:
# onednn-cpu-gomp + onednn-devel-cpu-gomp 2023.2.0, installed into a venv in
# the build folder when missing), at the native ISA and capped to AVX2, and
# compares them (bench/onednn_compare.py).
#   bench/onednn_versions.sh [RUNS [NETS]] [onednn_conv_bench flags: --calls 5,
#                            --all-implementations ...]
# RUNS (default 3) rounds; in each, net by net (NETS: comma-separated, default
# all five), the four configurations run in turn, seconds apart, so that a
# change of the machine's load hits all alike; the comparison takes the
# medians over rounds. XTRAIN_BUILD_DIR (default build) names the build
# folder; raw outputs go to its bench/onednn_versions-T-threads/ (T:
# OMP_NUM_THREADS, "all" when unset). METRIC (median,
# fastest or cpu; see onednn_conv_bench.cpp) picks the per-shape figure.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=3
if [[ $# -gt 0 && $1 != -* ]]; then RUNS=$1; shift; fi
NETS=$(awk '!/^#/ {print $1}' bench/onednn_conv_shapes.txt | uniq | paste -sd,)
if [[ $# -gt 0 && $1 != -* ]]; then NETS=$1; shift; fi
BUILD="${XTRAIN_BUILD_DIR:-build}"
PYPI_VERSION=2023.2.0  # the last onednn-cpu-gomp; later PyPI builds use TBB
VENV="$BUILD/onednn-pypi-$PYPI_VERSION"
OUT="$BUILD/bench/onednn_versions-${OMP_NUM_THREADS:-all}-threads"
mkdir -p "$OUT"

as_root() { if [[ $(id -u) == 0 ]]; then "$@"; else sudo "$@"; fi; }
if [[ ! -f /usr/include/oneapi/dnnl/dnnl.hpp ]]; then
  as_root apt-get install -y libdnnl-dev g++
fi
if [[ ! -f "$VENV/include/oneapi/dnnl/dnnl.hpp" ]]; then
  python3 -c 'import ensurepip' 2>/dev/null || as_root apt-get install -y python3-venv
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "onednn-cpu-gomp==$PYPI_VERSION" \
    "onednn-devel-cpu-gomp==$PYPI_VERSION"
fi

build() {  # build NAME [compiler flags]: the benchmark against one oneDNN
  local bin="$BUILD/bench/$1"
  shift
  if [[ ! -x "$bin" || bench/onednn_conv_bench.cpp -nt "$bin" ]]; then
    g++ -std=c++17 -O2 -Wall -Wextra -fopenmp bench/onednn_conv_bench.cpp -o "$bin" "$@" -ldnnl >&2
  fi
  echo "$bin"
}
DEBIAN=$(build onednn_conv_bench_debian)
PYPI=$(build onednn_conv_bench_pypi -I"$VENV/include" -L"$VENV/lib" \
  -Wl,-rpath,"$(realpath "$VENV/lib")")

rm -f "$OUT"/*.txt
for run in $(seq "$RUNS"); do
  for net in ${NETS//,/ }; do
    for isa in native avx2; do
      for version in debian pypi; do
        bin=$DEBIAN
        [[ $version == pypi ]] && bin=$PYPI
        echo "round $run/$RUNS: $net, $version, ISA $isa" >&2
        cap=()
        [[ $isa == avx2 ]] && cap=(ONEDNN_MAX_CPU_ISA=AVX2)
        env "${cap[@]}" "$bin" --nets "$net" "$@" >>"$OUT/$version-$isa-$run.txt"
      done
    done
  done
done
python3 bench/onednn_compare.py "$OUT" "$RUNS" --metric "${METRIC:-median}"

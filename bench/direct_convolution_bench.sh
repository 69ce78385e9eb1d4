#!/usr/bin/env bash
# Builds bench/direct_convolution_bench.cpp with our direct and Winograd
# convolution kernels compiled in (as the library compiles them: -O3, -ffp-contract=fast)
# and runs it at the AVX2 cap (XTRAIN_MAX_CPU_ISA=avx2) and natively, one thread.
#   bench/direct_convolution_bench.sh [repetitions]
# XTRAIN_BUILD_DIR (default build): the build whose libxtrain (errors) and
# generated headers are used; the binary goes to its bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${XTRAIN_BUILD_DIR:-build}"
BIN="$BUILD/bench/direct_convolution_bench"
mkdir -p "$BUILD/bench"
SOURCES=(bench/direct_convolution_bench.cpp src/layers/direct_convolution_kernels.cpp
         src/layers/winograd_kernels.cpp src/core/cpu_isa.cpp)
stale=0
for s in "${SOURCES[@]}"; do [[ ! -x "$BIN" || "$s" -nt "$BIN" ]] && stale=1; done
if (( stale )); then
  g++ -std=c++17 -O3 -DNDEBUG -ffp-contract=fast -Isrc -Iinclude -I"$BUILD/include" \
    "${SOURCES[@]}" -o "$BIN" -L"$BUILD/lib" -Wl,-rpath,"$(realpath "$BUILD/lib")" -lxtrain >&2
fi
XTRAIN_MAX_CPU_ISA=avx2 "$BIN" "$@"
env -u XTRAIN_MAX_CPU_ISA "$BIN" "$@"

#!/usr/bin/env bash
# Builds bench/fma_peak.cpp (standalone: no libxtrain) unless the binary is
# newer than the source, then runs it with the given arguments.
#   bench/fma_peak.sh [--kind fp32|bf16|fp16|amx_bf16] [--isa avx2|avx512|native] [--threads N]
# (no --kind and no --isa: the table of every kind; either: one number).
# XTRAIN_BUILD_DIR (default build) names where the binary goes (bench/ in it).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${XTRAIN_BUILD_DIR:-build}/bench/fma_peak"
mkdir -p "$(dirname "$BIN")"
if [[ ! -x "$BIN" || bench/fma_peak.cpp -nt "$BIN" ]]; then
  # -O2 without -march: the kernels carry their own target attributes, so
  # the binary runs on any x86-64 and picks what the CPU has at run time.
  g++ -std=c++17 -O2 -Wall -Wextra -fopenmp bench/fma_peak.cpp -o "$BIN" >&2
fi
exec "$BIN" "$@"

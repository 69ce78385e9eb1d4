#!/usr/bin/env bash
# Configures and builds xtrain into build/ (or $XTRAIN_BUILD_DIR).
# Extra arguments go to cmake's configure step, e.g. -DXTRAIN_USE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR="${XTRAIN_BUILD_DIR:-build}"
JOBS="${XTRAIN_JOBS:-$(nproc)}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"

#!/usr/bin/env bash
# README command 1: set up a fresh Debian machine, build, make the
# Fashion-MNIST LMDBs, and train LeNet (10,000 iterations) on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

# Only what this command runs: no test-only packages, no test suite, and the
# CUDA backend only when the machine has a GPU (for its architecture), and
# precompiled headers (nearly half the build's CPU time). An existing build
# folder keeps its configuration (README command 2 builds everything).
scripts/install_deps.sh --run
build_options=()
if [ ! -f "${XTRAIN_BUILD_DIR:-build}/CMakeCache.txt" ]; then
  build_options+=(-DXTRAIN_BUILD_TESTS=OFF -DXTRAIN_PRECOMPILE_HEADERS=ON)
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    build_options+=(-DXTRAIN_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native)
  else
    build_options+=(-DXTRAIN_USE_CUDA=OFF)
  fi
fi
scripts/build.sh "${build_options[@]}"
examples/fashion_mnist/create_fashion_mnist.sh
"${XTRAIN_BUILD_DIR:-build}/bin/xtrain" train --solver=models/lenet/lenet_solver.prototxt "$@"

#!/usr/bin/env bash
# README command 1: set up a fresh Debian machine, build, make the
# Fashion-MNIST LMDBs, and train LeNet (10,000 iterations) on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
scripts/build.sh
examples/fashion_mnist/create_fashion_mnist.sh
"${XTRAIN_BUILD_DIR:-build}/bin/xtrain" train --solver=models/lenet/lenet_solver.prototxt "$@"

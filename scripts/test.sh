#!/usr/bin/env bash
# README command 2: set up a fresh Debian machine, build, and run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install_deps.sh
scripts/build.sh
cd "${XTRAIN_BUILD_DIR:-build}"
ctest --output-on-failure -j "${XTRAIN_JOBS:-$(nproc)}"
